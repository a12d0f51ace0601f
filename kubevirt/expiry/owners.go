package expiry

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// ReasonOverOwnerCeiling is the Event on a VM deleted because its owner held more VMs in its
// namespace than the cluster's per-owner ceiling allows.
const ReasonOverOwnerCeiling = driver.ReasonOverOwnerCeiling

type ownerKey struct{ namespace, owner string }

// ceilings enforces each namespace's per-owner ceilings (driver.ReadOwnerPolicy: VMs,
// vCPUs, memory, and an owner's own) on the VMs a pass kept: an owner (driver.HeldBy) keeps
// the VMs it has held longest (driver.HeldSince) as long as they fit, and the newest from
// the first that does not fit go, each deletion fenced and conditional on the version read,
// with an Event. sbf refuses such a create
// itself; this holds against VMs made past it by a race of two sbf processes or by hand. A
// VM naming no owner counts for nobody.
func (c *Controller) ceilings(ctx context.Context, vms []*kv.VirtualMachine, rep *Report, errs *[]error) {
	held := map[ownerKey][]*kv.VirtualMachine{}
	for _, vm := range vms {
		if who := driver.HeldBy(vm); who != "" {
			k := ownerKey{vm.Namespace, who}
			held[k] = append(held[k], vm)
		}
	}
	policies := map[string]driver.OwnerPolicy{}
	for k, list := range held {
		policy, known := policies[k.namespace]
		if !known {
			var err error
			if policy, err = driver.ReadOwnerPolicy(ctx, c.o.Client, k.namespace); err != nil {
				*errs = append(*errs, err)
			}
			policies[k.namespace] = policy
		}
		max := policy.For(k.owner)
		kept, over := fitting(max, list)
		for _, vm := range list[kept:] {
			c.deleteOverCeiling(ctx, vm, k, len(list), max, over, rep, errs)
		}
	}
}

// fitting sorts an owner's VMs oldest first and says how many of them fit the ceilings, and
// which ceilings the next one passes.
func fitting(max driver.OwnerCeilings, list []*kv.VirtualMachine) (kept int, over []string) {
	if max.None() {
		return len(list), nil
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := driver.HeldSince(list[i]), driver.HeldSince(list[j])
		return a.Before(b) || (a.Equal(b) && list[i].Name < list[j].Name)
	})
	var use driver.OwnerUse
	for i, vm := range list {
		use = use.Plus(driver.UseOf(vm))
		if over = max.Over(use); len(over) > 0 {
			return i, over
		}
	}
	return len(list), nil
}

func (c *Controller) deleteOverCeiling(ctx context.Context, vm *kv.VirtualMachine, k ownerKey, held int,
	max driver.OwnerCeilings, over []string, rep *Report, errs *[]error) {
	key := vm.Namespace + "/" + vm.Name
	if err := c.deleteAsRead(ctx, vm); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.wake() // written or gone since the list: the next pass reads it afresh
		return
	} else if err != nil {
		*errs = append(*errs, fmt.Errorf("deleting VirtualMachine %s past its owner's ceiling: %w", key, err))
		return
	}
	rep.OverCeiling = append(rep.OverCeiling, key)
	rep.gone(vm)
	why := fmt.Sprintf("its owner %s held %d VMs in namespace %s, past ConfigMap %s's %s (%s); the newest go",
		k.owner, held, k.namespace, driver.PolicyConfigMap, max, strings.Join(over, ", "))
	c.o.Logf("VirtualMachine %s: deleted: %s", key, why)
	c.record(ctx, vm, ReasonOverOwnerCeiling, "sbf-kubevirt controller deleted the VirtualMachine: "+why)
}

// deleteAsRead deletes vm, fenced, conditional on the version the pass read: one written
// since (its owner's sbf deleting it, a renewal) is left to the next pass.
func (c *Controller) deleteAsRead(ctx context.Context, vm *kv.VirtualMachine) error {
	if c.o.MayAct != nil {
		if err := c.o.MayAct(ctx); err != nil {
			return fmt.Errorf("not deleting: %w", err)
		}
	}
	return c.o.Client.Delete(ctx, vm, client.Preconditions{UID: &vm.UID, ResourceVersion: &vm.ResourceVersion})
}
