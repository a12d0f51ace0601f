package driver

import (
	"context"
	"strings"
	"testing"

	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
)

// A VMI that fails (an image that cannot be pulled, a node that cannot run it) fails
// Start with KubeVirt's message, and List reports the VM broken, so the planner replaces it.
func TestAFailedVMIFailsStartAndListsBroken(t *testing.T) {
	w := newWorld(t, fakevirt.Options{Fault: func(vm *kv.VirtualMachine) string {
		if vm.Labels[LabelSandbox] == "doomed" {
			return "ErrImagePull: quay.io/containerdisks/nope not found"
		}
		return ""
	}})
	ctx := context.Background()
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "doomed"), CPUs: 1, MemoryGiB: 1}
	if err := w.d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	err := w.d.Start(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "ErrImagePull") {
		t.Fatalf("Start of a VM whose VMI fails: %v; want KubeVirt's message", err)
	}
	list, err := w.d.List(ctx)
	if err != nil || len(list) != 1 || list[0].Status != drivers.Broken {
		t.Errorf("List: %+v, %v; want the VM broken", list, err)
	}
	if err := w.d.Delete(ctx, s.Name); err != nil {
		t.Errorf("Delete of a broken VM: %v", err)
	}
}
