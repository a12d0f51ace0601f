package driver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// The cluster's policy for sbf's VMs: a ConfigMap in the VMs' namespace that the cluster's
// operator writes (deploy/kubevirt/policy.yaml) and whoever runs VMs there may only read.
// Each key is a ceiling on what one Kubernetes user's VMs there (their
// sandboxforge.dev/created-by) hold at once; absent or "0": no ceiling.
const (
	PolicyConfigMap = "sbf-policy"
	// PolicyMaxPerOwner is the most VMs.
	PolicyMaxPerOwner = "max-vms-per-owner"
	// PolicyMaxCPUsPerOwner is the most vCPUs, all their VMs' together.
	PolicyMaxCPUsPerOwner = "max-cpus-per-owner"
	// PolicyMaxMemoryPerOwner is the most guest memory, all their VMs' together: a Kubernetes
	// quantity ("64Gi").
	PolicyMaxMemoryPerOwner = "max-memory-per-owner"
)

// OwnerCeilings are a namespace's ceilings per owner; a zero field sets none.
type OwnerCeilings struct {
	MaxVMs         int   `json:"max_vms_per_owner"`
	MaxCPUs        int   `json:"max_cpus_per_owner,omitempty"`
	MaxMemoryBytes int64 `json:"max_memory_bytes_per_owner,omitempty"`
}

// OwnerUse is what VMs take of the ceilings. A VM whose size an instancetype decides
// counts as one VM, with no vCPUs or memory (sbf cannot see them).
type OwnerUse struct {
	VMs         int   `json:"vms"`
	CPUs        int   `json:"cpus"`
	MemoryBytes int64 `json:"memory_bytes"`
}

// UseOf is what vm takes.
func UseOf(vm *kv.VirtualMachine) OwnerUse {
	r := reported(vm)
	return OwnerUse{VMs: 1, CPUs: r.CPUs, MemoryBytes: gibBytes(r.MemoryGiB)}
}

// Plus is u and v together.
func (u OwnerUse) Plus(v OwnerUse) OwnerUse {
	return OwnerUse{u.VMs + v.VMs, u.CPUs + v.CPUs, u.MemoryBytes + v.MemoryBytes}
}

// Over names the ceilings u passes: "vms", "cpus", "memory".
func (c OwnerCeilings) Over(u OwnerUse) []string {
	var over []string
	if c.MaxVMs > 0 && u.VMs > c.MaxVMs {
		over = append(over, "vms")
	}
	if c.MaxCPUs > 0 && u.CPUs > c.MaxCPUs {
		over = append(over, "cpus")
	}
	if c.MaxMemoryBytes > 0 && u.MemoryBytes > c.MaxMemoryBytes {
		over = append(over, "memory")
	}
	return over
}

// None says whether no ceiling is set.
func (c OwnerCeilings) None() bool { return c == OwnerCeilings{} }

// ReadOwnerCeilings reads namespace's per-owner ceilings: none when there is no ConfigMap, an
// error when a value is not a whole number (memory: not a quantity) or the ConfigMap cannot
// be read for another reason than its absence: the operator's typo must not lift a ceiling.
func ReadOwnerCeilings(ctx context.Context, c client.Reader, namespace string) (OwnerCeilings, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: PolicyConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return OwnerCeilings{}, nil
	}
	if err != nil {
		return OwnerCeilings{}, fmt.Errorf("reading ConfigMap %s/%s (the VMs' per-owner ceilings): %w", namespace,
			PolicyConfigMap, err)
	}
	bad := func(key, raw, what string) error {
		return fmt.Errorf("ConfigMap %s/%s: %s=%q is not %s", namespace, PolicyConfigMap, key, raw, what)
	}
	var out OwnerCeilings
	for key, n := range map[string]*int{PolicyMaxPerOwner: &out.MaxVMs, PolicyMaxCPUsPerOwner: &out.MaxCPUs} {
		if raw, ok := cm.Data[key]; ok {
			if *n, err = strconv.Atoi(strings.TrimSpace(raw)); err != nil || *n < 0 {
				return OwnerCeilings{}, bad(key, raw, "a whole number")
			}
		}
	}
	if raw, ok := cm.Data[PolicyMaxMemoryPerOwner]; ok {
		q, err := resource.ParseQuantity(strings.TrimSpace(raw))
		if err != nil || q.Sign() < 0 {
			return OwnerCeilings{}, bad(PolicyMaxMemoryPerOwner, raw, "a quantity of memory (such as 64Gi)")
		}
		out.MaxMemoryBytes = q.Value()
	}
	return out, nil
}

// HeldBy is who holds a VM: the Kubernetes user that made it; "" for a VM that does not say.
func HeldBy(vm *kv.VirtualMachine) string { return vm.Annotations[AnnotationCreatedBy] }

// admitOwner refuses to make s's VM when its maker (these credentials) would then hold more
// in the namespace than the cluster's per-owner ceilings allow (VMs, vCPUs, memory): coded
// INSTANCE_LIMIT_EXCEEDED, as the host's cap, with what is held, what was asked and what to
// do. The controller enforces the same ceilings on VMs made past them by any other means.
func (d *Driver) admitOwner(ctx context.Context, s drivers.Spec) error {
	ceilings, err := ReadOwnerCeilings(ctx, d.c, d.set.Namespace)
	if err != nil {
		return d.apiError("creating "+s.Name, err)
	}
	who := d.whoami(ctx)
	if ceilings.None() || who == "" {
		return nil
	}
	var vms kv.VirtualMachineList
	if err := d.c.List(ctx, &vms, client.InNamespace(d.set.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
		return d.apiError("counting the VirtualMachines "+who+" holds", err)
	}
	var held []string
	var use OwnerUse
	for i := range vms.Items {
		vm := &vms.Items[i]
		if HeldBy(vm) == who && vm.DeletionTimestamp == nil && vm.Name != ObjectName(s.Name) {
			held, use = append(held, instanceName(vm)), use.Plus(UseOf(vm))
		}
	}
	asked := OwnerUse{VMs: 1}
	if d.set.Instancetype == "" {
		asked.CPUs, asked.MemoryBytes = s.CPUs, gibBytes(s.MemoryGiB)
	}
	over := ceilings.Over(use.Plus(asked))
	if len(over) == 0 {
		return nil
	}
	slices.Sort(held)
	return d.overCeilings(who, ceilings, use, asked, over, held)
}

func (d *Driver) overCeilings(who string, ceilings OwnerCeilings, use, asked OwnerUse, over, held []string) error {
	source := "ConfigMap " + d.set.Namespace + "/" + PolicyConfigMap
	return coded.New(coded.InstanceLimit, map[string]any{"max_instances": ceilings.MaxVMs,
		"active_instances": len(held), "instances": held, "owner": who, "over": over, "ceilings": ceilings,
		"held": use, "asked": asked, "max_instances_source": source,
		"next_steps": []string{"destroy one of them (sbf destroy in its workspace), or ask for a smaller sandbox",
			"sbf-kubevirt holders lists who holds which VM in the namespace",
			"ask the cluster's operator to raise the ceiling in " + source}},
		"owner limit reached (%s): %s holds %d VMs with %d vCPUs and %s of memory in namespace %s (%s) and asked "+
			"for %d vCPUs and %s more, past the ceilings of one person there (%s); destroy one or ask for less; "+
			"the ceilings are the cluster operator's (%s)", strings.Join(over, ", "), who, use.VMs, use.CPUs,
		quantity(use.MemoryBytes), d.set.Namespace, strings.Join(held, ", "), asked.CPUs,
		quantity(asked.MemoryBytes), ceilings, source)
}

// quantity is bytes as Kubernetes writes memory.
func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }

// String is the ceilings set, as the ConfigMap's keys say them.
func (c OwnerCeilings) String() string {
	var parts []string
	if c.MaxVMs > 0 {
		parts = append(parts, fmt.Sprintf("%s=%d", PolicyMaxPerOwner, c.MaxVMs))
	}
	if c.MaxCPUs > 0 {
		parts = append(parts, fmt.Sprintf("%s=%d", PolicyMaxCPUsPerOwner, c.MaxCPUs))
	}
	if c.MaxMemoryBytes > 0 {
		parts = append(parts, PolicyMaxMemoryPerOwner+"="+quantity(c.MaxMemoryBytes))
	}
	return strings.Join(parts, ", ")
}
