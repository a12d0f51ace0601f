package state

import (
	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/byname"
	"github.com/sandboxforge/sbf/state/statefile"
)

// VM is the state file's record of a VM's spec.
type VM = statefile.VM

// RecordOf is the state file's record of a spec: the format declares each
// field of drivers.Spec under its name (TestTheVMRecordKeepsEverySpecField).
func RecordOf(s drivers.Spec) *VM {
	vm := &VM{}
	byname.Copy(vm, s)
	return vm
}

// SpecOf is the spec a record holds.
func SpecOf(vm *VM) drivers.Spec {
	var s drivers.Spec
	byname.Copy(&s, *vm)
	return s
}
