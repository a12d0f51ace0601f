package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
)

var quickVirt = fakevirt.Options{StartDelay: 50 * time.Millisecond, StopDelay: 50 * time.Millisecond}

// policy reads the NetworkPolicy of instance's VM; nil when there is none.
func (w world) policy(t *testing.T, instance string) *networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	err := w.c.Get(context.Background(), types.NamespacedName{Namespace: w.ns,
		Name: PolicyName(ObjectName(instance))}, &np)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &np
}

// selected lists the pods np's selector selects, as a CNI would find them.
func (w world) selected(t *testing.T, np *networkingv1.NetworkPolicy) []corev1.Pod {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := w.c.List(context.Background(), &pods, client.InNamespace(w.ns),
		client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// The policy is an object of the API server, owned by the VM, that selects exactly the
// VM's launcher pod; it follows the spec through starts and goes with the VM.
func TestTheNetworkPolicyFollowsTheSpec(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, quickVirt)
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "api"), CPUs: 1, MemoryGiB: 1,
		Egress: &drivers.Egress{Mode: "deny"}}
	other := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "web"), CPUs: 1, MemoryGiB: 1}
	for _, sp := range []drivers.Spec{s, other} {
		if err := w.d.Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
		if err := w.d.Start(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	np := w.policy(t, s.Name)
	if np == nil || np.Spec.Egress != nil || len(np.Spec.PolicyTypes) != 1 {
		t.Fatalf("deny: %+v", np)
	}
	var vm kv.VirtualMachine
	if err := w.c.Get(ctx, w.d.key(s.Name), &vm); err != nil {
		t.Fatal(err)
	}
	if own := np.OwnerReferences; len(own) != 1 || own[0].UID != vm.UID {
		t.Errorf("owners %+v; want the VM %s", own, vm.UID)
	}
	vmi, err := w.d.vmi(ctx, s.Name)
	if err != nil || vmi == nil {
		t.Fatal(vmi, err)
	}
	pods := w.selected(t, np)
	if len(pods) != 1 || pods[0].Labels[kv.CreatedByLabel] != string(vmi.UID) {
		t.Fatalf("the policy selects %d pods; want the launcher pod of %s alone", len(pods), vmi.Name)
	}
	if w.policy(t, other.Name) != nil {
		t.Error("a sandbox without a policy has a NetworkPolicy")
	}

	// A change of policy is Stop, Reconfigure, Start: the start writes the new one.
	s.Egress = &drivers.Egress{Mode: "allowlist", Allow: []string{"10.20.0.0/16:5432"}}
	w.restart(t, s)
	np2 := w.policy(t, s.Name)
	if np2 == nil || np2.UID != np.UID || len(np2.Spec.Egress) != 1 ||
		np2.Spec.Egress[0].To[0].IPBlock.CIDR != "10.20.0.0/16" || np2.Spec.Egress[0].Ports[0].Port.IntValue() != 5432 {
		t.Fatalf("after the change to %v: %+v", s.Egress, np2)
	}
	w.restart(t, s)
	if np3 := w.policy(t, s.Name); np3.ResourceVersion != np2.ResourceVersion {
		t.Error("a start with the same policy rewrote it")
	}

	s.Egress = nil
	w.restart(t, s)
	if w.policy(t, s.Name) != nil {
		t.Error("the policy stayed after the spec dropped it")
	}

	s.Egress = &drivers.Egress{Mode: "deny"}
	w.restart(t, s)
	if err := w.d.Delete(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	// No garbage collector runs here (no kube-controller-manager): Delete removed it.
	if w.policy(t, s.Name) != nil {
		t.Error("the policy outlived its VM")
	}
}

func (w world) restart(t *testing.T, s drivers.Spec) {
	t.Helper()
	ctx := context.Background()
	if err := w.d.Stop(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Reconfigure(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// A name in the allowlist makes nothing: no VM, no policy.
func TestANameRuleMakesNothing(t *testing.T) {
	w := newWorld(t, quickVirt)
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "api"), CPUs: 1, MemoryGiB: 1,
		Egress: &drivers.Egress{Mode: "allowlist", Allow: []string{"pypi.org"}}}
	var pe *drivers.PolicyError
	if err := w.d.Create(context.Background(), s); !errors.As(err, &pe) {
		t.Fatalf("Create = %v; want a *drivers.PolicyError", err)
	}
	var vms kv.VirtualMachineList
	if err := w.c.List(context.Background(), &vms, client.InNamespace(w.ns)); err != nil || len(vms.Items) > 0 {
		t.Errorf("a refused policy left %d VMs (%v)", len(vms.Items), err)
	}
}

// A NetworkPolicy named like sbf's but not sbf's is neither changed nor removed, and a VM
// that needs that name is not started.
func TestAForeignNetworkPolicyIsNeverTouched(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, quickVirt)
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "api"), CPUs: 1, MemoryGiB: 1}
	foreign := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: PolicyName(ObjectName(s.Name)),
		Namespace: w.ns, Labels: map[string]string{"team": "someone-else"}},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	if err := w.c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatalf("a start without a policy beside someone else's NetworkPolicy: %v", err)
	}
	if err := w.d.Stop(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	s.Egress = &drivers.Egress{Mode: "deny"}
	if err := w.d.Start(ctx, s); !errors.Is(err, ErrNotOurs) {
		t.Errorf("Start over someone else's NetworkPolicy = %v; want ErrNotOurs", err)
	}
	if vmi, _ := w.d.vmi(ctx, s.Name); vmi != nil {
		t.Error("the VM started without its policy")
	}
	if np := w.policy(t, s.Name); np == nil || np.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("someone else's NetworkPolicy was changed: %+v", np)
	}
}
