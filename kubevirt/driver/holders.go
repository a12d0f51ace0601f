package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Holding is one sbf VM of a namespace as the cluster records it: who made it, for which
// workspace and sandbox, until when. The cluster is the shared record: every teammate reads
// the same objects.
type Holding struct {
	Owner        string `json:"owner"` // HeldBy: its claimer, else its maker; "" when it names none
	VM           string `json:"vm"`
	Instance     string `json:"instance"`
	WorkspaceTag string `json:"workspace_tag,omitempty"`
	Sandbox      string `json:"sandbox,omitempty"`
	Status       string `json:"status,omitempty"` // KubeVirt's printable status
	LeaseEnd     string `json:"lease_expires_at,omitempty"`
}

// Holdings is who holds what in a namespace: each VM, each owner's VM count (ByOwner) and
// use of the ceilings (UseByOwner), and the namespace's per-owner ceilings (0: none) and
// the owners excepted from them.
type Holdings struct {
	Namespace string `json:"namespace"`
	OwnerPolicy
	VMs        []Holding           `json:"vms"`
	ByOwner    map[string]int      `json:"by_owner"`
	UseByOwner map[string]OwnerUse `json:"use_by_owner"`
}

// HoldingsIn reads every sbf VM of namespace (by its managed-by label), by owner then name.
func HoldingsIn(ctx context.Context, c client.Reader, namespace string) (Holdings, error) {
	h := Holdings{Namespace: namespace, ByOwner: map[string]int{}, UseByOwner: map[string]OwnerUse{}}
	var err error
	if h.OwnerPolicy, err = ReadOwnerPolicy(ctx, c, namespace); err != nil {
		return h, err
	}
	var vms kv.VirtualMachineList
	sel := client.MatchingLabels{LabelManagedBy: ManagedBy}
	if err := c.List(ctx, &vms, client.InNamespace(namespace), sel); err != nil {
		return h, fmt.Errorf("listing sbf's VirtualMachines in %s: %w", namespace, err)
	}
	for i := range vms.Items {
		vm := &vms.Items[i]
		if vm.DeletionTimestamp != nil {
			continue
		}
		h.VMs = append(h.VMs, Holding{Owner: HeldBy(vm), VM: vm.Name, Instance: instanceName(vm),
			WorkspaceTag: vm.Labels[LabelWorkspaceTag], Sandbox: vm.Labels[LabelSandbox],
			Status: string(vm.Status.PrintableStatus), LeaseEnd: vm.Annotations[AnnotationLeaseEnd]})
		h.ByOwner[HeldBy(vm)]++
		h.UseByOwner[HeldBy(vm)] = h.UseByOwner[HeldBy(vm)].Plus(UseOf(vm))
	}
	slices.SortFunc(h.VMs, func(a, b Holding) int {
		if c := strings.Compare(a.Owner, b.Owner); c != 0 {
			return c
		}
		return strings.Compare(a.VM, b.VM)
	})
	return h, nil
}
