package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
)

func testVM(t *testing.T) *kv.VirtualMachine {
	t.Helper()
	set := Settings{Namespace: "ns", Image: DefaultImage, SSHUser: "sbf"}
	g := guest{WorkspaceID: "ws_c0ffee00aabb", User: "sbf", PublicKey: testKey}
	vm, err := newVM(drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "api"), CPUs: 1, MemoryGiB: 1}, set, g)
	if err != nil {
		t.Fatal(err)
	}
	vm.UID = "0000-vm-uid"
	return vm
}

// rulesOf prints egress rules as "CIDR ports;…", TCP ports only.
func rulesOf(t *testing.T, rules []networkingv1.NetworkPolicyEgressRule) string {
	t.Helper()
	var out []string
	for _, r := range rules {
		if len(r.To) != 1 || r.To[0].IPBlock == nil || r.To[0].PodSelector != nil || r.To[0].NamespaceSelector != nil {
			t.Fatalf("rule peers %+v; want one ipBlock", r.To)
		}
		var ports []string
		for _, p := range r.Ports {
			if p.Protocol == nil || *p.Protocol != "TCP" || p.Port == nil || p.EndPort != nil {
				t.Fatalf("port %+v; want one TCP port", p)
			}
			ports = append(ports, p.Port.String())
		}
		out = append(out, r.To[0].IPBlock.CIDR+" "+strings.Join(ports, ","))
	}
	return strings.Join(out, "; ")
}

func TestAPolicyBecomesANetworkPolicyOnTheLauncherPod(t *testing.T) {
	vm := testVM(t)
	for _, c := range []struct {
		name  string
		e     *drivers.Egress
		rules string // "" with deny: policyTypes [Egress] and no rule
	}{
		{"deny", &drivers.Egress{Mode: "deny"}, ""},
		{"allowlist", &drivers.Egress{Mode: "allowlist", Allow: []string{"10.20.0.0/16", "203.0.113.7:8443",
			"[2001:db8::1]:5432", "2001:db8:1::/48"}},
			"10.20.0.0/16 80,443; 203.0.113.7/32 8443; 2001:db8::1/128 5432; 2001:db8:1::/48 80,443"},
		{"empty allowlist", &drivers.Egress{Mode: "allowlist"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			np, err := networkPolicy(vm, c.e)
			if err != nil || np == nil {
				t.Fatalf("networkPolicy = %v, %v", np, err)
			}
			if got := rulesOf(t, np.Spec.Egress); got != c.rules {
				t.Errorf("egress rules %q; want %q", got, c.rules)
			}
			if c.rules == "" && len(np.Spec.Egress) != 0 {
				t.Errorf("deny has rules %+v", np.Spec.Egress)
			}
			if pt := np.Spec.PolicyTypes; len(pt) != 1 || pt[0] != networkingv1.PolicyTypeEgress {
				t.Errorf("policyTypes %v; want [Egress] (ingress untouched: port-forward and SSH)", pt)
			}
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(vm.Spec.Template.ObjectMeta.Labels)) {
				t.Errorf("selector %v does not select the VM's pod (template labels %v): %v", sel,
					vm.Spec.Template.ObjectMeta.Labels, err)
			}
			other := testVM(t)
			other.Name = "sbf-c0ffee00-web"
			labelTemplate(other)
			if sel.Matches(labels.Set(other.Spec.Template.ObjectMeta.Labels)) {
				t.Errorf("selector %v selects another VM's pod too", sel)
			}
			own := np.OwnerReferences
			if len(own) != 1 || own[0].UID != vm.UID || own[0].Kind != "VirtualMachine" || own[0].Name != vm.Name {
				t.Errorf("owner %+v; want the VM", own)
			}
			if np.Name != vm.Name+"-egress" || np.Namespace != "ns" || np.Labels[LabelManagedBy] != ManagedBy ||
				np.Labels[LabelSandbox] != "api" {
				t.Errorf("object %s/%s labels %v", np.Namespace, np.Name, np.Labels)
			}
		})
	}
}

func TestNoPolicyIsNoNetworkPolicy(t *testing.T) {
	for _, e := range []*drivers.Egress{nil, {Mode: "allow"}, {Mode: ""}} {
		if np, err := networkPolicy(testVM(t), e); np != nil || err != nil {
			t.Errorf("%v: %v, %v; want none", e, np, err)
		}
	}
}

// A NetworkPolicy matches addresses: a name in the allowlist is refused, never dropped (the
// VM would then run with less than the spec allows, or, with only names, under deny).
func TestANameRuleIsRefusedWithWhatWouldWork(t *testing.T) {
	e := &drivers.Egress{Mode: "allowlist", Allow: []string{"10.0.0.0/8", "pypi.org", "*.example.com:8443"}}
	d := &Driver{}
	err := d.EnforceEgress(context.Background(), drivers.Spec{Egress: e})
	var pe *drivers.PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("EnforceEgress = %v; want a *drivers.PolicyError", err)
	}
	for _, want := range []string{`"pypi.org"`, `"*.example.com:8443"`, "NetworkPolicy", "addresses only",
		"DNS-aware CNI", "lima"} {
		if !strings.Contains(pe.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, pe.Reason)
		}
	}
	if strings.Contains(pe.Reason, "10.0.0.0/8") {
		t.Errorf("reason names an address entry: %s", pe.Reason)
	}
	if len(pe.NextSteps) < 2 || !strings.Contains(pe.NextSteps[0], "CIDR") {
		t.Errorf("next steps %q", pe.NextSteps)
	}
	if np, err := networkPolicy(testVM(t), e); np != nil || err == nil {
		t.Errorf("networkPolicy = %v, %v; want the refusal", np, err)
	}
	if err := d.EnforceEgress(context.Background(), drivers.Spec{Egress: &drivers.Egress{Mode: "deny"}}); err != nil {
		t.Errorf("deny refused: %v", err)
	}
}

func TestABadEntryIsAnErrorNotAPolicy(t *testing.T) {
	_, err := egressRules(&drivers.Egress{Mode: "allowlist", Allow: []string{"https://pypi.org"}})
	if err == nil || !strings.Contains(fmt.Sprint(err), "https://pypi.org") {
		t.Errorf("a URL entry: %v", err)
	}
}
