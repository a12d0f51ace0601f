package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// recordLeases writes each touched sandbox's lease end onto its instance,
// for a backend that keeps it there (drivers.LeaseRecorder: a cluster's
// VirtualMachine annotation, so whoever looks at the cluster sees when a
// VM goes). Touched: a lease end the plan records (acquired, renewed,
// extended), or an instance this run made, adopted or restarted. The lease
// that counts stays the workspace's: a failure is a warning, never a failed
// run.
func (e *Engine) recordLeases(ctx context.Context, u *run, res *Result) []string {
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Sandboxes)) {
		renewed := slices.ContainsFunc(res.Plan.Leases, func(l plan.LeaseRenewal) bool { return l.Sandbox == name })
		ds, rec := res.Desired.Sandboxes[name], res.State.Sandboxes[name]
		if ds.Lease == nil || rec == nil || rec.Phase != state.Running || !u.now.Before(ds.Lease.ExpiresAt) {
			continue
		}
		if !renewed && !slices.ContainsFunc(res.Plan.Actions, func(a plan.Action) bool { return a.Sandbox == name }) {
			continue
		}
		drv, err := e.Drivers(rec.Driver, u.r)
		if err != nil {
			continue
		}
		lr := drivers.CapabilitiesOf(drv).RecordLease
		if lr == nil {
			continue
		}
		if err := lr.RecordLease(ctx, rec.Instance, ds.Lease.ExpiresAt); err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: could not record the lease end on %s: %v", name,
				rec.Instance, err))
		}
	}
	return warnings
}
