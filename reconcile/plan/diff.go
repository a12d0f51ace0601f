package plan

import (
	"fmt"
	"slices"
	"strconv"
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
		cur = *r.VM
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

// diffSpecs classifies differences the way Lima does: resources, mounts
// and ports change with a restart; vmType, arch, image and a smaller disk
// need a new instance.
func diffSpecs(cur, want drivers.Spec) (restart, replace []string) {
	str := func(key, a, b string, into *[]string) {
		if a != b {
			*into = append(*into, fmt.Sprintf("%s %s → %s", key, orDefault(a), orDefault(b)))
		}
	}
	str("vm_type", cur.VMType, want.VMType, &replace)
	str("arch", cur.Arch, want.Arch, &replace)
	str("template", cur.Template, want.Template, &replace)
	if cur.Image != want.Image {
		replace = append(replace, fmt.Sprintf("image %s → %s", cur.Image, want.Image))
	}
	switch {
	case want.DiskGiB < cur.DiskGiB:
		replace = append(replace, fmt.Sprintf("disk %s → %s GiB (shrink)", num(cur.DiskGiB), num(want.DiskGiB)))
	case want.DiskGiB > cur.DiskGiB:
		restart = append(restart, fmt.Sprintf("disk %s → %s GiB", num(cur.DiskGiB), num(want.DiskGiB)))
	}
	if cur.CPUs != want.CPUs {
		restart = append(restart, fmt.Sprintf("cpus %d → %d", cur.CPUs, want.CPUs))
	}
	if cur.MemoryGiB != want.MemoryGiB {
		restart = append(restart, fmt.Sprintf("memory %s → %s GiB", num(cur.MemoryGiB), num(want.MemoryGiB)))
	}
	if !slices.Equal(cur.Mounts, want.Mounts) {
		restart = append(restart, fmt.Sprintf("mounts %s → %s", list(cur.Mounts), list(want.Mounts)))
	}
	if !slices.Equal(cur.Ports, want.Ports) {
		restart = append(restart, fmt.Sprintf("ports %s → %s", list(cur.Ports), list(want.Ports)))
	}
	if !cur.Egress.Equal(want.Egress) {
		restart = append(restart, fmt.Sprintf("egress %s → %s", cur.Egress, want.Egress))
	}
	return restart, replace
}

func joinCauses(c []string) string { return strings.Join(c, ", ") }

func orDefault(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func list(s []string) string { return "[" + strings.Join(s, " ") + "]" }
