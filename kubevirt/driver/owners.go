package driver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/coded"
)

// The cluster's policy for sbf's VMs: a ConfigMap in the VMs' namespace that the cluster's
// operator writes (deploy/kubevirt/policy.yaml) and whoever runs VMs there may only read.
const (
	PolicyConfigMap = "sbf-policy"
	// PolicyMaxPerOwner is its key for the most VMs one Kubernetes user may hold there at
	// once (their sandboxforge.dev/created-by); absent or "0": no ceiling.
	PolicyMaxPerOwner = "max-vms-per-owner"
)

// OwnerCeiling reads namespace's per-owner ceiling: 0 when there is none (no ConfigMap, no
// key, "0"), an error when the value is not a whole number (the operator's typo must not
// lift the ceiling) or the ConfigMap cannot be read for another reason than its absence.
func OwnerCeiling(ctx context.Context, c client.Reader, namespace string) (int, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: PolicyConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading ConfigMap %s/%s (the VMs' per-owner ceiling): %w", namespace, PolicyConfigMap, err)
	}
	raw, ok := cm.Data[PolicyMaxPerOwner]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("ConfigMap %s/%s: %s=%q is not a whole number of VMs", namespace, PolicyConfigMap,
			PolicyMaxPerOwner, raw)
	}
	return n, nil
}

// HeldBy is who holds a VM: the Kubernetes user that made it; "" for a VM that does not say.
func HeldBy(vm *kv.VirtualMachine) string { return vm.Annotations[AnnotationCreatedBy] }

// admitOwner refuses to make instance's VM when its maker (these credentials) already holds
// as many VMs in the namespace as the cluster's per-owner ceiling allows: coded
// INSTANCE_LIMIT_EXCEEDED, as the host's cap, with the VMs held and what to do. The
// controller enforces the same ceiling on VMs made past it by any other means.
func (d *Driver) admitOwner(ctx context.Context, instance string) error {
	ceiling, err := OwnerCeiling(ctx, d.c, d.set.Namespace)
	if err != nil {
		return d.apiError("creating "+instance, err)
	}
	who := d.whoami(ctx)
	if ceiling == 0 || who == "" {
		return nil
	}
	var vms kv.VirtualMachineList
	if err := d.c.List(ctx, &vms, client.InNamespace(d.set.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
		return d.apiError("counting the VirtualMachines "+who+" holds", err)
	}
	var held []string
	for i := range vms.Items {
		vm := &vms.Items[i]
		if HeldBy(vm) == who && vm.DeletionTimestamp == nil && vm.Name != ObjectName(instance) {
			held = append(held, instanceName(vm))
		}
	}
	if len(held) < ceiling {
		return nil
	}
	slices.Sort(held)
	source := "ConfigMap " + d.set.Namespace + "/" + PolicyConfigMap + " " + PolicyMaxPerOwner
	return coded.New(coded.InstanceLimit, map[string]any{"max_instances": ceiling, "active_instances": len(held),
		"instances": held, "owner": who, "max_instances_source": source,
		"next_steps": []string{"destroy one of them (sbf destroy in its workspace)",
			"sbf-kubevirt holders lists who holds which VM in the namespace",
			"ask the cluster's operator to raise " + PolicyMaxPerOwner + " in " + source}},
		"owner limit reached: %s holds %d of the %d VMs one person may hold in namespace %s (%s); destroy one; "+
			"the ceiling is the cluster operator's (%s)", who, len(held), ceiling, d.set.Namespace,
		strings.Join(held, ", "), source)
}
