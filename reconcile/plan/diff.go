package plan

import (
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/state"
)

// currentSpec is the best knowledge of what an instance has: the spec last
// applied, corrected by whatever the backend reports. With no record (an
// adopted instance) unreported fields are assumed to be as desired.
func currentSpec(want drivers.Spec, r *state.Sandbox, inst drivers.Instance) drivers.Spec {
	cur := want
	if r != nil && r.VM != nil {
		cur = state.SpecOf(r.VM)
	}
	rep := inst.Reported
	if rep.CPUs > 0 {
		cur.CPUs = rep.CPUs
	}
	if rep.MemoryGiB > 0 {
		cur.MemoryGiB = rep.MemoryGiB
	}
	if rep.DiskGiB > 0 {
		cur.DiskGiB = rep.DiskGiB
	}
	if rep.Arch != "" {
		cur.Arch = rep.Arch
	}
	if rep.VMType != "" {
		cur.VMType = rep.VMType
	}
	return cur
}

// diffSpecs classifies differences by drivers' one table (the way Lima
// does: resources, mounts and ports change with a restart; vmType, arch,
// image and a smaller disk need a new instance), each cause saying what
// it does to the VM.
func diffSpecs(cur, want drivers.Spec, driver string) (restart, replace []string) {
	for _, c := range drivers.DiffSpec(cur, want, driver) {
		switch c.Effect {
		case drivers.Replace:
			replace = append(replace, c.String())
		case drivers.Restart:
			restart = append(restart, c.String())
		}
	}
	return restart, replace
}

func joinCauses(c []string) string { return strings.Join(c, ", ") }

func list(s []string) string { return "[" + strings.Join(s, " ") + "]" }
