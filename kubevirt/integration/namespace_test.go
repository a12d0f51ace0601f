package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// The namespace the kubeconfig's context names is the one sbf uses when
// SBF_KUBEVIRT_NAMESPACE is not set, not a generated sbf-<tag> the user may not create.
func TestTheContextsNamespaceIsUsed(t *testing.T) {
	t.Parallel()
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

// A namespace sbf made for a workspace goes with the workspace's last VM; the namespace sbf
// was given stays.
func TestANamespaceSbfMadeGoesWithItsLastVM(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	ctx := context.Background()
	env := s.env(t, clock.Real{}, s.kubeconfig)
	_, id, err := spec.WorkspaceIdentity(env.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ns string
		goes     bool
	}{{"generated", "sbf-" + drivers.WorkspaceTag(id), true}, {"given", s.ns, false}} {
		getenv := env.Getenv
		e := env
		e.Getenv = func(k string) string {
			if k == "SBF_KUBEVIRT_NAMESPACE" && tc.name == "generated" {
				return ""
			}
			return getenv(k)
		}
		d, err := launch(t, e)
		if err != nil {
			t.Fatal(err)
		}
		sp := drivers.Spec{Name: drivers.InstanceName(id, "only"), CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
		if err := d.Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
		var ns corev1.Namespace
		if err := s.admin.Get(ctx, types.NamespacedName{Name: tc.ns}, &ns); err != nil {
			t.Fatalf("%s namespace %s: %v", tc.name, tc.ns, err)
		}
		if err := d.Delete(ctx, sp.Name); err != nil {
			t.Fatal(err)
		}
		// This API server runs no namespace controller: a namespace deleted stays
		// Terminating, marked.
		if err := s.admin.Get(ctx, types.NamespacedName{Name: tc.ns}, &ns); err != nil {
			t.Fatal(err)
		}
		if goes := ns.DeletionTimestamp != nil; goes != tc.goes {
			t.Errorf("the %s namespace %s: deleted %v, want %v", tc.name, tc.ns, goes, tc.goes)
		}
	}
}
