package state

import (
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/state/statefile"
)

// VM is the state file's record of a VM's spec.
type VM = statefile.VM

// RecordOf is the state file's record of a spec, field by field (a plan
// converts every sandbox's record: internal/byname's reflection would
// double what planning allocates); TestTheVMRecordKeepsEverySpecField
// fails when a field of drivers.Spec is left out.
func RecordOf(s drivers.Spec) *VM {
	vm := &VM{Name: s.Name, CPUs: s.CPUs, MemoryGiB: s.MemoryGiB, DiskGiB: s.DiskGiB, Arch: s.Arch, VMType: s.VMType,
		Template: s.Template, Image: statefile.VMImage(s.Image), Mounts: slices.Clone(s.Mounts),
		Ports: slices.Clone(s.Ports), Emulation: s.Emulation, Backend: maps.Clone(s.Backend)}
	if s.Egress != nil {
		vm.Egress = &statefile.VMEgress{Mode: s.Egress.Mode, Allow: slices.Clone(s.Egress.Allow)}
	}
	return vm
}

// SpecOf is the spec a record holds.
func SpecOf(vm *VM) drivers.Spec {
	s := drivers.Spec{Name: vm.Name, CPUs: vm.CPUs, MemoryGiB: vm.MemoryGiB, DiskGiB: vm.DiskGiB, Arch: vm.Arch,
		VMType: vm.VMType, Template: vm.Template, Image: drivers.Image(vm.Image), Mounts: slices.Clone(vm.Mounts),
		Ports: slices.Clone(vm.Ports), Emulation: vm.Emulation, Backend: maps.Clone(vm.Backend)}
	if vm.Egress != nil {
		s.Egress = &drivers.Egress{Mode: vm.Egress.Mode, Allow: slices.Clone(vm.Egress.Allow)}
	}
	return s
}
