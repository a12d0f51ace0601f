package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/state"
)

// recordLeases writes each touched sandbox's lease end onto its instance,
// for a backend that keeps it there (drivers.LeaseRecorder: a cluster's
// VirtualMachine annotation, which the cluster's controller expires it by).
// The instance was made with its lease end (Spec.LeaseEnd); this moves it.
// Touched: a lease end the run recorded in the state (acquired, renewed,
// extended; a renewal another run's write overtook is not), or an instance
// this run made, adopted or restarted, whether it runs, stopped or failed
// to start (its VM exists and must keep the lease the workspace holds). The
// lease that counts stays the workspace's: a failure is a warning, never a
// failed run; an instance already gone is no failure.
func (e *Engine) recordLeases(ctx context.Context, u *run, res *Result) []string {
	var warnings []string
	touched := map[string]bool{}
	if res.Outcome != nil {
		for _, l := range res.Outcome.Leases {
			touched[l.Sandbox] = true
		}
	}
	for _, a := range res.Plan.Actions {
		touched[a.Sandbox] = true
	}
	recorders := map[string]drivers.LeaseRecorder{} // by driver: the capability is looked up once
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Sandboxes)) {
		ds, rec := res.Desired.Sandboxes[name], res.recorded.Sandboxes[name]
		if !touched[name] || ds.Lease == nil || rec == nil || !slices.Contains(leasedPhases, rec.Phase) ||
			!u.now.Before(ds.Lease.ExpiresAt) {
			continue
		}
		lr, seen := recorders[rec.Driver]
		if !seen {
			if drv, err := e.Drivers(rec.Driver, u.r); err == nil {
				lr = drivers.CapabilitiesOf(drv).RecordLease
			}
			recorders[rec.Driver] = lr
		}
		if lr == nil {
			continue
		}
		err := lr.RecordLease(ctx, rec.Instance, ds.Lease.ExpiresAt)
		if err != nil && !errors.Is(err, drivers.ErrNotFound) {
			warnings = append(warnings, fmt.Sprintf("%s: could not record the lease end on %s: %v", name,
				rec.Instance, err))
		}
	}
	return warnings
}

// leasedPhases are those of a sandbox whose instance exists.
var leasedPhases = []state.Phase{state.Running, state.Stopped, state.Failed}
