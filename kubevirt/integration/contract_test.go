package integration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// The contract holds through the plugin process and its protocol, as sbf uses them.
func TestContractThroughThePlugin(t *testing.T) {
	t.Parallel()
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			s := newSpace(t, quick)
			d, err := launch(t, s.env(t, clock.Real{}, s.kubeconfig))
			if err != nil {
				t.Fatal(err)
			}
			return drivertest.World{Driver: d, MarksOwnership: true, Imports: true,
				AddForeign: s.addForeign, ForeignExists: s.foreignExists}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, Arch: "x86_64", VMType: "qemu"}
		},
	})
}

// addForeign makes a VM the way a person would: no sbf labels.
func (s space) addForeign(t *testing.T, name string) {
	t.Helper()
	halted := kv.RunStrategyHalted
	vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
		Labels: map[string]string{"team": "someone-else"}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	if err := s.admin.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
}

// foreignExists: the VM is there as it was made, halted, unlabelled, its spec unchanged.
func (s space) foreignExists(t *testing.T, name string) bool {
	var vm kv.VirtualMachine
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &vm); err != nil {
		return false
	}
	return vm.Generation == 1 && vm.DeletionTimestamp == nil && vm.Labels[driver.LabelManagedBy] == "" &&
		*vm.Spec.RunStrategy == kv.RunStrategyHalted
}
