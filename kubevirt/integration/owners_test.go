package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// shippedPolicy makes deploy/kubevirt's policy ConfigMap in the VMs' namespace, its
// per-owner ceiling set to max.
func shippedPolicy(t *testing.T, sh shipped, max string) {
	t.Helper()
	for _, u := range manifests(t, sh.system.ns, sh.vms.ns) {
		if u.GetKind() != "ConfigMap" || u.GetName() != driver.PolicyConfigMap {
			continue
		}
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Namespace != sh.vms.ns || cm.Data[driver.PolicyMaxPerOwner] == "" {
			t.Fatalf("deploy/kubevirt's policy: %+v; want a ceiling in the VMs' namespace", cm)
		}
		cm.Data[driver.PolicyMaxPerOwner] = max
		if err := sh.vms.admin.Create(context.Background(), &cm); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("deploy/kubevirt ships no ConfigMap " + driver.PolicyConfigMap)
}

// heldBy counts the VMs of s by the owner each names.
func heldBy(t *testing.T, s space) map[string]int {
	out := map[string]int{}
	for _, vm := range vmsIn(t, s) {
		out[driver.HeldBy(&vm)]++
	}
	return out
}

// Two people, each bound to the shipped Role, share the VMs' namespace under the shipped
// policy with a ceiling of one VM per owner: alice's second sandbox is refused, coded, naming
// what she holds, and nothing is made for it; bob's first is made. A VM naming alice made
// past the ceiling another way (here by an admin) is deleted by the controller, the newest,
// with an Event, and alice's first and bob's stay.
func TestAnOwnersCeilingHoldsAcrossTwoIdentities(t *testing.T) {
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	shippedPolicy(t, sh, "1")
	role := sh.rules["Role/sbf-kubevirt"]
	alice := kubetest.Kubeconfig(t, cluster.User(t, "alice", s.ns, role))
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w } // the controller's clock

	if _, err := now(newWorkspace(t, s, alice)).apply(); err != nil {
		t.Fatalf("alice's first sandbox: %v", err)
	}
	_, err := now(newWorkspace(t, s, alice)).apply()
	if err == nil {
		t.Fatalf("alice's second sandbox was made past her ceiling of one: %v", heldBy(t, s))
	}
	c := coded.Of(err, coded.Unknown)
	if c.Code != coded.InstanceLimit || c.Details["owner"] != "alice" || c.Details["max_instances"] != float64(1) {
		t.Fatalf("alice's second sandbox, past her ceiling: %#v", c)
	}
	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's first sandbox: %v", err)
	}
	if got := heldBy(t, s); got["alice"] != 1 || got["bob"] != 1 || len(got) != 2 {
		t.Fatalf("VMs by owner: %v; want one each", got)
	}

	// Bob sees who holds what, from the VM objects: the same record as alice's sbf.
	list := exec.Command(plugin, "holders", "--namespace", s.ns, "--json")
	list.Env = append(os.Environ(), "KUBECONFIG="+bob)
	held, err := list.Output()
	if err != nil {
		t.Fatalf("sbf-kubevirt holders as bob: %v", err)
	}
	var h driver.Holdings
	if err := json.Unmarshal(held, &h); err != nil || h.Ceiling != 1 || h.ByOwner["alice"] != 1 ||
		h.ByOwner["bob"] != 1 || len(h.VMs) != 2 || h.VMs[0].Owner != "alice" || h.VMs[0].LeaseEnd == "" {
		t.Errorf("sbf-kubevirt holders as bob: %v\n%s", err, held)
	}

	halted := kv.RunStrategyHalted
	extra := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "alices-extra", Namespace: s.ns,
		Labels: map[string]string{driver.LabelManagedBy: driver.ManagedBy},
		Annotations: map[string]string{driver.AnnotationCreatedBy: "alice",
			driver.AnnotationLeaseEnd: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	time.Sleep(time.Second) // creation times have whole seconds: the extra is the newest
	if err := s.admin.Create(context.Background(), extra); err != nil {
		t.Fatal(err)
	}
	ctrl := kubetest.Kubeconfig(t, sh.as(t, "owners-controller", "sbf-controller"))
	out := runPlugin(t, ctrl, "controller", "--namespaces", s.ns)
	waitFor(t, "the controller to delete alice's extra VM", func() bool { return heldBy(t, s)["alice"] == 1 })
	if got := heldBy(t, s); got["bob"] != 1 {
		t.Errorf("VMs by owner after the controller's pass: %v", got)
	}
	for _, vm := range vmsIn(t, s) {
		if vm.Name == extra.Name {
			t.Errorf("the controller deleted alice's first VM, not the newest:\n%s", out)
		}
	}
	waitFor(t, "the Event", func() bool {
		var events corev1.EventList
		if err := s.admin.List(context.Background(), &events, client.InNamespace(s.ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == extra.Name && ev.Reason == expiry.ReasonOverOwnerCeiling {
				return true
			}
		}
		return false
	})
}
