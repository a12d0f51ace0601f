package drivers

import (
	"context"
	"reflect"
	"testing"
)

// Every field of Spec is classified once: a field added without deciding
// what changing it does fails here rather than silently planning nothing.
func TestEverySpecFieldIsClassified(t *testing.T) {
	seen := map[string]int{}
	for _, f := range specFields {
		seen[f.field]++
	}
	typ := reflect.TypeOf(Spec{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if seen[name] != 1 {
			t.Errorf("Spec.%s is classified %d times in specFields, want once", name, seen[name])
		}
		delete(seen, name)
	}
	for name := range seen {
		t.Errorf("specFields names %s, which Spec does not have", name)
	}
}

// Changing each field one at a time is seen, with the effect the table
// gives it; a backend setting takes its registration's effect.
func TestEachFieldsChangeIsSeen(t *testing.T) {
	if _, ok := Lookup("fieldtest"); !ok {
		Register(Registration{Name: "fieldtest", Settings: []Setting{{Key: "storage_class", Effect: Replace}},
			New: func(context.Context, Env) (Driver, error) { return nil, NotBuiltIn("fieldtest") }})
	}
	base := Spec{Name: "sbf-1-a", CPUs: 2, MemoryGiB: 4, DiskGiB: 20, Arch: "x86_64", VMType: "qemu",
		Template: "t", Image: Image{Location: "/i"}, Mounts: []string{"/m"}, Ports: []string{"80:80"},
		Emulation: "auto", Backend: map[string]string{"storage_class": "fast", "preference": "p"},
		Egress: &Egress{Mode: "deny"}}
	cases := []struct {
		change func(*Spec)
		key    string
		effect Effect
	}{
		{func(s *Spec) { s.CPUs = 4 }, "cpus", Restart},
		{func(s *Spec) { s.MemoryGiB = 8 }, "memory", Restart},
		{func(s *Spec) { s.DiskGiB = 30 }, "disk", Restart},
		{func(s *Spec) { s.DiskGiB = 10 }, "disk", Replace},
		{func(s *Spec) { s.Arch = "aarch64" }, "arch", Replace},
		{func(s *Spec) { s.VMType = "vz" }, "vm_type", Replace},
		{func(s *Spec) { s.Template = "u" }, "template", Replace},
		{func(s *Spec) { s.Image.Location = "/j" }, "image", Replace},
		{func(s *Spec) { s.Mounts = nil }, "mounts", Restart},
		{func(s *Spec) { s.Ports = nil }, "ports", Restart},
		{func(s *Spec) { s.Egress = nil }, "egress", Restart},
		{func(s *Spec) { s.Backend = map[string]string{"storage_class": "slow", "preference": "p"} },
			"storage_class", Replace},
		{func(s *Spec) { s.Backend = map[string]string{"storage_class": "fast"} }, "preference", Restart},
		{func(s *Spec) { s.Emulation = "never" }, "emulation", NoEffect},
	}
	for _, c := range cases {
		want := base
		want.Backend = map[string]string{"storage_class": "fast", "preference": "p"}
		c.change(&want)
		got := DiffSpec(base, want, "fieldtest")
		if len(got) != 1 || got[0].Key != c.key || got[0].Effect != c.effect {
			t.Errorf("changing %s: %+v, want one %s change that %s", c.key, got, c.key, c.effect)
		}
		if equal := base.Equal(want); equal != (c.effect == NoEffect) {
			t.Errorf("changing %s: Equal = %v", c.key, equal)
		}
	}
}
