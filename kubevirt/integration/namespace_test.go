package integration

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// The namespace the kubeconfig's context names is the one sbf uses when
// SBF_KUBEVIRT_NAMESPACE is not set, not a generated sbf-<tag> the user may not create.
func TestTheContextsNamespaceIsUsed(t *testing.T) {
	s := newSpace(t, quick)
	kc, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = s.ns
	path := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	env := s.env(t, clock.Real{}, path)
	getenv := env.Getenv
	env.Getenv = func(k string) string {
		if k == "SBF_KUBEVIRT_NAMESPACE" {
			return ""
		}
		return getenv(k)
	}
	d, err := launch(t, env)
	if err != nil {
		t.Fatal(err)
	}
	name := drivers.InstanceName("ws_c0ffee00aabb", "ctx")
	if err := d.Create(context.Background(), drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 5}); err != nil {
		t.Fatal(err)
	}
	w := &workspace{space: s}
	if vms := w.vms(t); len(vms) != 1 || vms[0].Annotations["sandboxforge.dev/instance"] != name {
		t.Errorf("the VM is not in the context's namespace %s: %d VMs there", s.ns, len(vms))
	}
}
