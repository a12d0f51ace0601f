package driver

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/coded"
)

// A sandbox's [network] policy is a NetworkPolicy on its VM's virt-launcher pod: the guest's
// traffic leaves through that pod (masquerade on the pod network), so the pod's egress is
// the guest's. Whether anything enforces it is the cluster's CNI's business; sbf makes the
// object and cannot tell.

// PolicyName is the NetworkPolicy of the VirtualMachine named vm.
func PolicyName(vm string) string { return vm + "-egress" }

// EnforceEgress says, at plan time, whether s's policy can be a NetworkPolicy: deny, and
// allowlists of addresses, can; a name cannot.
func (d *Driver) EnforceEgress(ctx context.Context, s drivers.Spec) error {
	_, err := egressRules(s.Egress)
	return err
}

// egressRules are the NetworkPolicy's egress rules for e: nil for deny (policyTypes
// [Egress] with no rule lets nothing out), one rule per allowlist entry (its addresses, on
// its TCP ports: TCP only, as the proxy of the lima driver carries only TCP). A name entry
// is a *drivers.PolicyError: a NetworkPolicy matches addresses, and resolving the name here
// would allow whatever it resolves to today, for as long as the policy lives.
func egressRules(e *drivers.Egress) ([]networkingv1.NetworkPolicyEgressRule, error) {
	if e == nil {
		return nil, nil
	}
	p, err := egress.ParsePolicy(e.Mode, e.Allow)
	if err != nil {
		return nil, fmt.Errorf("reading the network policy: %w", err)
	}
	if p.Mode != egress.ModeAllowlist {
		return nil, nil
	}
	var names []string
	rules := make([]networkingv1.NetworkPolicyEgressRule, 0, len(p.Rules))
	for _, r := range p.Rules {
		if !r.IsAddr() {
			names = append(names, fmt.Sprintf("%q", coded.Clip(r.Entry)))
			continue
		}
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: r.Prefix.Masked().String()}}},
			Ports: tcpPorts(r.Ports)})
	}
	if len(names) > 0 {
		return nil, namesRefused(names)
	}
	return rules, nil
}

func tcpPorts(ports []int) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		tcp, port := corev1.ProtocolTCP, intstr.FromInt32(int32(p))
		out[i] = networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port}
	}
	return out
}

// namesRefused is an allowlist with names, which no NetworkPolicy can hold. The engine adds
// its own next steps after these (the lima driver; egress = "allow").
func namesRefused(names []string) *drivers.PolicyError {
	return &drivers.PolicyError{Driver: Name, Reason: "the kubevirt driver enforces a network policy as a Kubernetes " +
		"NetworkPolicy, which matches addresses only, and the allowlist names hosts (" + strings.Join(names, ", ") +
		"): name rules need a DNS-aware CNI (Cilium or Calico FQDN policies) or the lima driver's egress proxy",
		NextSteps: []string{
			"list the addresses instead: an IP or CIDR entry, with :PORT for a port other than 80 and 443",
			"or, on a cluster whose CNI has FQDN policies (Cilium toFQDNs, Calico domains), write that policy " +
				"yourself for the VM's pod (label " + LabelVM + ") and set egress = \"allow\"",
		}}
}

// networkPolicy is the NetworkPolicy vm's pod needs for e; nil when e lets everything out.
func networkPolicy(vm *kv.VirtualMachine, e *drivers.Egress) (*networkingv1.NetworkPolicy, error) {
	rules, err := egressRules(e)
	if err != nil || e == nil || e.Mode == "" || e.Mode == string(egress.ModeAllow) {
		return nil, err
	}
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelVM: vm.Name}
	for _, k := range []string{LabelWorkspace, LabelWorkspaceTag, LabelSandbox} {
		if v, ok := vm.Labels[k]; ok {
			labels[k] = v
		}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName(vm.Name), Namespace: vm.Namespace, Labels: labels,
			// Owned by the VM: the garbage collector deletes it with the VM, whoever deletes that.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: kv.GroupVersion.String(), Kind: "VirtualMachine",
				Name: vm.Name, UID: vm.UID}}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: launcherSelector(vm.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      rules,
		},
	}, nil
}

// launcherSelector selects vm's virt-launcher pod: KubeVirt gives the pod its VMI's
// labels, which are the VM template's, where newVM (or Start, for an older VM) put these.
func launcherSelector(vm string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelVM: vm}
}

// labelTemplate makes sure the VMIs vm starts carry the labels its policy selects.
func labelTemplate(vm *kv.VirtualMachine) {
	if vm.Spec.Template == nil {
		return
	}
	if vm.Spec.Template.ObjectMeta.Labels == nil {
		vm.Spec.Template.ObjectMeta.Labels = map[string]string{}
	}
	maps.Copy(vm.Spec.Template.ObjectMeta.Labels, launcherSelector(vm.Name))
}

// applyEgress makes vm's NetworkPolicy what e says: created or updated for a policy,
// deleted (when sbf made it) for none. It runs before the VM starts, so a VM never runs
// under another policy than the spec it was started with.
func (d *Driver) applyEgress(ctx context.Context, vm *kv.VirtualMachine, e *drivers.Egress) error {
	want, err := networkPolicy(vm, e)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: vm.Namespace, Name: PolicyName(vm.Name)}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur networkingv1.NetworkPolicy
		err := d.c.Get(ctx, key, &cur)
		switch {
		case want == nil && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
			return nil // one who may not read NetworkPolicies made none with sbf
		case want == nil && err == nil && cur.Labels[LabelManagedBy] != ManagedBy:
			return nil // someone else's: not sbf's to remove
		case want == nil && err == nil:
			return d.deletePolicy(ctx, &cur)
		case apierrors.IsNotFound(err):
			if err := d.c.Create(ctx, want); err != nil {
				return d.apiError("creating NetworkPolicy "+key.String(), err)
			}
			return nil
		case err != nil:
			return d.apiError("reading NetworkPolicy "+key.String(), err)
		case cur.Labels[LabelManagedBy] != ManagedBy:
			return fmt.Errorf("writing the network policy of %s: NetworkPolicy %s: %w", vm.Name, key, ErrNotOurs)
		case samePolicy(&cur, want):
			return nil
		}
		cur.Labels, cur.OwnerReferences, cur.Spec = want.Labels, want.OwnerReferences, want.Spec
		if err := d.c.Update(ctx, &cur); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return d.apiError("updating NetworkPolicy "+key.String(), err)
		}
		return nil
	})
}

func samePolicy(cur, want *networkingv1.NetworkPolicy) bool {
	return equality.Semantic.DeepEqual(cur.Spec, want.Spec) && maps.Equal(cur.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences)
}

func (d *Driver) deletePolicy(ctx context.Context, np *networkingv1.NetworkPolicy) error {
	err := d.c.Delete(ctx, np, client.Preconditions{UID: &np.UID})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return d.apiError("deleting NetworkPolicy "+np.Namespace+"/"+np.Name, err)
}

// dropEgress deletes the policy of a VM that is gone. The garbage collector would (the VM
// owns it), but only where kube-controller-manager runs it, and only eventually. Best
// effort for that reason: the VM is gone either way.
func (d *Driver) dropEgress(ctx context.Context, vm string) {
	var np networkingv1.NetworkPolicy
	key := types.NamespacedName{Namespace: d.set.Namespace, Name: PolicyName(vm)}
	if err := d.c.Get(ctx, key, &np); err == nil && np.Labels[LabelManagedBy] == ManagedBy {
		_ = d.deletePolicy(ctx, &np)
	}
}
