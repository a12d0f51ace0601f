package driver

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
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

// A cluster that serves no KubeVirt (its CRDs missing) is said to be one, coded, with what
// to do, not as the client's "no matches for kind": here the API server is asked for
// KubeVirt's kinds in a version it does not serve, which its discovery answers as it does
// for a cluster without the CRDs.
func TestAClusterWithoutKubeVirtIsSaidToBeOne(t *testing.T) {
	kubetest.Need(t, cluster)
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "kubevirt.io", Version: "v1alpha9"}
	s.AddKnownTypes(gv, &kv.VirtualMachine{}, &kv.VirtualMachineList{})
	metav1.AddToGroupVersion(s, gv)
	c, err := client.New(cluster.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ns := cluster.Namespace(t)
	d, err := New(Options{Getenv: func(k string) string {
		return map[string]string{"SBF_KUBEVIRT_NAMESPACE": ns}[k]
	}, Config: cluster.Config, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.List(context.Background())
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || u.ProbableCause != "kubevirt_not_installed" || len(u.NextSteps) == 0 {
		t.Fatalf("listing on a cluster without KubeVirt: %v; want unavailable, kubevirt_not_installed", err)
	}
}
