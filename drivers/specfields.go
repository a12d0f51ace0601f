package drivers

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Effect is what changing one field of a VM's spec does to its instance.
type Effect int

const (
	// NoEffect fields say how a VM starts or is reached, not what it is.
	NoEffect Effect = iota
	// Restart changes are applied to the stopped VM (an update).
	Restart
	// Replace changes need a new instance.
	Replace
)

// String says what the change does, for plan causes.
func (e Effect) String() string {
	switch e {
	case Restart:
		return "restarts the VM"
	case Replace:
		return "replaces the VM"
	}
	return "recorded only"
}

// Change is one field whose value differs.
type Change struct {
	Key      string // as the configuration names it
	From, To string
	Effect   Effect
}

func (c Change) String() string { return fmt.Sprintf("%s %s → %s", c.Key, c.From, c.To) }

// specField is how one field of Spec is compared and what changing it
// does. Every field of Spec has exactly one (TestEverySpecFieldIsClassified).
type specField struct {
	field string // the Go field
	diff  func(cur, want Spec, driver string) []Change
}

// specFields is the one table that decides what a spec change does, for
// every backend: the planner's update/replace and Spec.Equal both read it.
var specFields = []specField{
	{"Name", func(cur, want Spec, _ string) []Change { return str("name", cur.Name, want.Name, Replace) }},
	{"VMType", func(cur, want Spec, _ string) []Change { return str("vm_type", cur.VMType, want.VMType, Replace) }},
	{"Arch", func(cur, want Spec, _ string) []Change { return str("arch", cur.Arch, want.Arch, Replace) }},
	{"Template", func(cur, want Spec, _ string) []Change {
		return str("template", cur.Template, want.Template, Replace)
	}},
	{"Image", func(cur, want Spec, _ string) []Change {
		if cur.Image == want.Image {
			return nil
		}
		return []Change{{"image", cur.Image.String(), want.Image.String(), Replace}}
	}},
	{"DiskGiB", diffDisk},
	{"CPUs", func(cur, want Spec, _ string) []Change {
		if cur.CPUs == want.CPUs {
			return nil
		}
		return []Change{{"cpus", strconv.Itoa(cur.CPUs), strconv.Itoa(want.CPUs), Restart}}
	}},
	{"MemoryGiB", func(cur, want Spec, _ string) []Change {
		if cur.MemoryGiB == want.MemoryGiB {
			return nil
		}
		return []Change{{"memory", num(cur.MemoryGiB), num(want.MemoryGiB) + " GiB", Restart}}
	}},
	{"Mounts", func(cur, want Spec, _ string) []Change { return lists("mounts", cur.Mounts, want.Mounts) }},
	{"Ports", func(cur, want Spec, _ string) []Change { return lists("ports", cur.Ports, want.Ports) }},
	{"Egress", func(cur, want Spec, _ string) []Change {
		if cur.Egress.Equal(want.Egress) {
			return nil
		}
		return []Change{{"egress", cur.Egress.String(), want.Egress.String(), Restart}}
	}},
	{"Backend", diffBackend},
	// How the VM may be run (emulation or hardware), not what it is.
	{"Emulation", func(cur, want Spec, _ string) []Change {
		return str("emulation", cur.Emulation, want.Emulation, NoEffect)
	}},
	// A create's lease end, not what the VM is: the planner keeps leases (Plan.Leases).
	{"LeaseEnd", func(Spec, Spec, string) []Change { return nil }},
}

func diffDisk(cur, want Spec, _ string) []Change {
	switch {
	case want.DiskGiB < cur.DiskGiB:
		return []Change{{"disk", num(cur.DiskGiB), num(want.DiskGiB) + " GiB (shrink)", Replace}}
	case want.DiskGiB > cur.DiskGiB:
		return []Change{{"disk", num(cur.DiskGiB), num(want.DiskGiB) + " GiB", Restart}}
	}
	return nil
}

// diffBackend compares the backend's own settings, each with the effect
// its registration declares (Restart when it declares none).
func diffBackend(cur, want Spec, driver string) []Change {
	var out []Change
	keys := slices.Sorted(maps.Keys(cur.Backend))
	for k := range want.Backend {
		if _, ok := cur.Backend[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if cur.Backend[k] != want.Backend[k] {
			out = append(out, Change{k, orDefault(cur.Backend[k]), orDefault(want.Backend[k]), settingEffect(driver, k)})
		}
	}
	return out
}

// settingEffect is what the registration says changing key does; a key
// it does not declare (the backend is not linked) restarts the VM.
func settingEffect(driver, key string) Effect {
	if reg, ok := Lookup(driver); ok {
		for _, s := range reg.Settings {
			if s.Key == key {
				return s.Effect
			}
		}
	}
	return Restart
}

// DiffSpec lists the fields of want that differ from cur (the spec an
// instance has), in the table's order, each with what changing it does to
// an instance of driver.
func DiffSpec(cur, want Spec, driver string) []Change {
	var out []Change
	for _, f := range specFields {
		out = append(out, f.diff(cur, want, driver)...)
	}
	return out
}

// Equal reports whether two specs describe the same VM: no field differs
// but those that say only how it starts.
func (s Spec) Equal(o Spec) bool {
	for _, c := range DiffSpec(s, o, "") {
		if c.Effect != NoEffect {
			return false
		}
	}
	return true
}

func str(key, a, b string, e Effect) []Change {
	if a == b {
		return nil
	}
	return []Change{{key, orDefault(a), orDefault(b), e}}
}

func lists(key string, a, b []string) []Change {
	if slices.Equal(a, b) {
		return nil
	}
	return []Change{{key, "[" + strings.Join(a, " ") + "]", "[" + strings.Join(b, " ") + "]", Restart}}
}

func orDefault(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
