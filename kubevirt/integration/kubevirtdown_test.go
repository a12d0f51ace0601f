package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
)

// stopKubeVirt takes virt-api's stand-in away (its group is what says KubeVirt runs) until
// the test ends.
func stopKubeVirt(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crds := apiextclient.NewForConfigOrDie(cluster.Config).ApiextensionsV1().CustomResourceDefinitions()
	standin, err := crds.Get(ctx, "standins.subresources.kubevirt.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)
	served := func() bool {
		_, err := disc.ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
		return err == nil
	}
	if err := crds.Delete(ctx, standin.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		standin.ResourceVersion = ""
		waitFor(t, "the stand-in's CRD to go", func() bool {
			_, err := crds.Get(ctx, standin.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if _, err := crds.Create(ctx, standin, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "virt-api's stand-in to be served again", served)
	})
	waitFor(t, "virt-api's stand-in to go", func() bool { return !served() })
}

// With KubeVirt's CRDs there but KubeVirt not running, a start and a delete say so at
// once, coded with next steps, instead of waiting out the start timeout (a minute here)
// for a VMI nobody will make or remove. Not parallel: KubeVirt is down for the whole cluster,
// so it runs alone, before the parallel tests start.
func TestStartAndDeleteDoNotWaitForAKubeVirtThatIsNotRunning(t *testing.T) {
	s := bareSpace(t)
	stopKubeVirt(t)
	d, err := launch(t, s.env(t, clock.Real{}, s.kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := drivers.InstanceName("ws_c0ffee00aabb", "down")
	sp := drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
	if err := d.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		c := coded.Of(err, coded.Unknown)
		steps, _ := c.Details["next_steps"].([]string)
		if c.Code != coded.BackendUnavailable || c.Details["probable_cause"] != "kubevirt_not_running" ||
			!strings.Contains(c.Message, "KubeVirt is not running") || len(steps) == 0 {
			t.Errorf("%s with KubeVirt down: %#v", what, c)
		}
	}
	began := time.Now()
	check("start", d.Start(ctx, sp))
	// KubeVirt put its finalizer on the VM when it last ran; only a running KubeVirt lifts it.
	vm := s.vm(t, driver.ObjectName(name))
	vm.Finalizers = append(vm.Finalizers, fakevirt.Finalizer)
	if err := s.admin.Update(ctx, vm); err != nil {
		t.Fatal(err)
	}
	check("delete", d.Delete(ctx, name))
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("start and delete took %s; want them to say at once that KubeVirt is down", took)
	}
	vm = s.vm(t, driver.ObjectName(name))
	if vm == nil || vm.DeletionTimestamp == nil {
		t.Errorf("the VM should stay marked for deletion: %v", vm)
	}
}
