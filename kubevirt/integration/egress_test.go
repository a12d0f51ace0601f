package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
)

// network rewrites the workspace's spec with [sandboxes.api.network] lines.
func (w *workspace) network(t *testing.T, lines string) {
	t.Helper()
	body := oneSandbox + "\n[sandboxes.api.network]\n" + lines + "\n"
	if err := os.WriteFile(filepath.Join(w.root, spec.FileName), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// policies are sbf's NetworkPolicies in the workspace's namespace.
func (w *workspace) policies(t *testing.T) []networkingv1.NetworkPolicy {
	t.Helper()
	var list networkingv1.NetworkPolicyList
	if err := w.admin.List(context.Background(), &list, client.InNamespace(w.ns),
		client.MatchingLabels{driver.LabelManagedBy: driver.ManagedBy}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// selectedBy are the pods np selects, as a CNI would find them.
func (w *workspace) selectedBy(t *testing.T, np *networkingv1.NetworkPolicy) []corev1.Pod {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := w.admin.List(context.Background(), &pods, client.InNamespace(w.ns),
		client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// sbf apply with a [network] policy on kubevirt, through the plugin: the policy is a
// NetworkPolicy on the VM's launcher pod, follows the spec, and goes with the sandbox; a
// name rule is refused, coded, with next steps.
func TestANetworkPolicyThroughTheEngine(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, newSpace(t, quick), "")
	w.network(t, `egress = "deny"`)
	if _, err := w.apply(); err != nil {
		t.Fatal(err)
	}
	nps, vms := w.policies(t), w.vms(t)
	if len(nps) != 1 || len(vms) != 1 || nps[0].Spec.Egress != nil || len(nps[0].OwnerReferences) != 1 ||
		nps[0].OwnerReferences[0].UID != vms[0].UID {
		t.Fatalf("after apply with deny: %d policies (%+v), %d VMs", len(nps), nps, len(vms))
	}
	var vmi kv.VirtualMachineInstance
	if err := w.admin.Get(context.Background(), client.ObjectKeyFromObject(&vms[0]), &vmi); err != nil {
		t.Fatal(err)
	}
	if pods := w.selectedBy(t, &nps[0]); len(pods) != 1 || pods[0].Labels[kv.CreatedByLabel] != string(vmi.UID) {
		t.Fatalf("the policy selects %d pods; want the VM's launcher pod alone", len(pods))
	}

	w.network(t, "egress = \"allowlist\"\nallow = [\"10.20.0.0/16:5432\", \"203.0.113.7\"]")
	res, err := w.apply()
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Plan.Actions; len(a) != 1 || a[0].Kind != plan.Update || !strings.Contains(a[0].Cause, "egress") {
		t.Errorf("a policy change planned %+v; want one update", a)
	}
	nps = w.policies(t)
	if len(nps) != 1 || len(nps[0].Spec.Egress) != 2 || nps[0].Spec.Egress[0].To[0].IPBlock.CIDR != "10.20.0.0/16" ||
		nps[0].Spec.Egress[1].To[0].IPBlock.CIDR != "203.0.113.7/32" || len(nps[0].Spec.Egress[1].Ports) != 2 {
		t.Fatalf("after the change to an allowlist: %+v", nps)
	}

	w.network(t, "egress = \"allowlist\"\nallow = [\"10.20.0.0/16\", \"pypi.org\"]")
	_, err = w.apply()
	c := coded.Of(err, coded.Unknown)
	steps, _ := c.Details["next_steps"].([]string)
	if c.Code != coded.PolicyUnsupported || !strings.Contains(c.Message, "NetworkPolicy") ||
		!strings.Contains(c.Message, `"pypi.org"`) || !strings.Contains(c.Message, "DNS-aware CNI") ||
		len(steps) < 3 || !strings.Contains(steps[0], "CIDR") {
		t.Fatalf("apply with a name rule: %v\n%#v", err, c)
	}
	t.Logf("refused: %s\nnext steps: %q", c.Message, steps)
	if nps2 := w.policies(t); len(nps2) != 1 || nps2[0].ResourceVersion != nps[0].ResourceVersion {
		t.Error("a refused policy changed the one in force")
	}

	w.network(t, `egress = "deny"`)
	if _, err := w.converge(reconcile.Options{Intent: reconcile.Destroy{All: true}}); err != nil {
		t.Fatal(err)
	}
	if vms, nps := w.vms(t), w.policies(t); len(vms) != 0 || len(nps) != 0 {
		t.Errorf("after destroy: %d VMs, %d policies", len(vms), len(nps))
	}
}
