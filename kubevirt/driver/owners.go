package driver

import (
	"context"
	"slices"
	"strings"
	"time"

	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

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

// HeldBy is who holds a VM: the Kubernetes user that claimed it (a teammate's spare), else
// the one that made it; "" for a VM that names neither.
func HeldBy(vm *kv.VirtualMachine) string {
	if who := vm.Annotations[AnnotationClaimedBy]; who != "" {
		return who
	}
	return vm.Annotations[AnnotationCreatedBy]
}

// HeldSince is when a VM's holder took it: the claim (its owner label's time) for a claimed
// spare, else its creation. The controller keeps an owner's oldest holdings, so a spare made
// long ago and claimed now counts as new. A claim that does not say when counts as newest.
func HeldSince(vm *kv.VirtualMachine) time.Time {
	if vm.Annotations[AnnotationClaimedBy] == "" {
		return vm.CreationTimestamp.Time
	}
	if l, err := labelOf(vm); err == nil && l != nil && l.Owner != nil && !l.Owner.Since.IsZero() {
		return l.Owner.Since
	}
	return time.Unix(1<<62, 0)
}

// admitOwner refuses to make s's VM when its maker (these credentials) would then hold more
// in the namespace than the cluster's per-owner ceilings allow (VMs, vCPUs, memory): coded
// INSTANCE_LIMIT_EXCEEDED, as the host's cap, with what is held, what was asked and what to
// do. The controller enforces the same ceilings on VMs made past them by any other means.
func (d *Driver) admitOwner(ctx context.Context, s drivers.Spec) error {
	asked := OwnerUse{VMs: 1}
	if d.set.Instancetype == "" {
		asked.CPUs, asked.MemoryBytes = s.CPUs, gibBytes(s.MemoryGiB)
	}
	return d.admitUse(ctx, "creating "+s.Name, ObjectName(s.Name), asked)
}

// admitUse is admitOwner for taking on asked, the VM object (made for it, or a teammate's
// spare being claimed), which is not counted among what is held.
func (d *Driver) admitUse(ctx context.Context, doing, object string, asked OwnerUse) error {
	policy, err := ReadOwnerPolicy(ctx, d.c, d.set.Namespace)
	if err != nil {
		return d.apiError(doing, err)
	}
	who, err := d.whoami(ctx)
	if err != nil {
		return err
	}
	ceilings := policy.For(who)
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
		if HeldBy(vm) == who && vm.DeletionTimestamp == nil && vm.Name != object {
			held, use = append(held, instanceName(vm)), use.Plus(UseOf(vm))
		}
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
