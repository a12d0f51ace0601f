package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// recordLeases writes each touched sandbox's lease end onto its instance,
// for a backend that keeps it there (drivers.LeaseRecorder: a cluster's
// VirtualMachine annotation, which the cluster's controller expires it by).
// The instance was made with its lease end (Spec.LeaseEnd); this moves it.
// Touched: a lease end the plan records (acquired, renewed, extended), or an
// instance this run made, adopted or restarted, whether it runs, stopped or
// failed to start (its VM exists and must keep the lease the workspace
// holds). The lease that counts stays the workspace's: a failure is a
// warning, never a failed run; an instance already gone is no failure.
func (e *Engine) recordLeases(ctx context.Context, u *run, res *Result) []string {
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Sandboxes)) {
		renewed := slices.ContainsFunc(res.Plan.Leases, func(l plan.LeaseRenewal) bool { return l.Sandbox == name })
		ds, rec := res.Desired.Sandboxes[name], res.State.Sandboxes[name]
		if ds.Lease == nil || rec == nil || !slices.Contains(leasedPhases, rec.Phase) ||
			!u.now.Before(ds.Lease.ExpiresAt) {
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
		err = lr.RecordLease(ctx, rec.Instance, ds.Lease.ExpiresAt)
		if err != nil && !errors.Is(err, drivers.ErrNotFound) {
			warnings = append(warnings, fmt.Sprintf("%s: could not record the lease end on %s: %v", name,
				rec.Instance, err))
		}
	}
	return warnings
}

// leasedPhases are those of a sandbox whose instance exists.
var leasedPhases = []state.Phase{state.Running, state.Stopped, state.Failed}
