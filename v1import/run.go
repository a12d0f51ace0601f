package v1import

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/v1import/leases"
)

// Plan says what Run would do with the same options; it changes nothing.
func (inv *Inventory) Plan(o Options) *Plan {
	p := &Plan{DB: inv.DB, Schema: inv.Schema, Now: inv.Now, DeleteLeaked: o.DeleteLeaked,
		Backends: slices.Clone(inv.Backends), Leases: make([]Entry, 0, len(inv.Leases)), Counts: maps.Clone(inv.Counts)}
	for _, e := range inv.Leases {
		e.Notes = slices.Clone(e.Notes)
		if e.Class == leases.Leaked && o.DeleteLeaked {
			e.Action = Delete
		}
		p.Leases = append(p.Leases, e)
	}
	return p
}

// Run takes over v1's leases as inv.Plan(o) says: it adopts each import's
// VM through eng.AdoptInstance, then (with DeleteLeaked) deletes each
// leaked VM through the driver that listed it. A lease that fails does
// not stop the others; the error says how many failed, and the report
// which and why.
func Run(ctx context.Context, eng *reconcile.Engine, inv *Inventory, o Options) (*Report, error) {
	rep := &Report{Plan: *inv.Plan(o)}
	failures := 0
	for i := range rep.Leases {
		e := &rep.Leases[i]
		var err error
		switch e.Action {
		case Adopt:
			ws := o.Workspace
			ws.Root = e.WorkspaceRoot
			var notes []string
			notes, err = adopt(ctx, eng, adoption{WS: ws, Sandbox: e.Sandbox, Driver: e.Driver,
				Instance: e.BackendInstance, Expires: e.ExpiresAt, Lease: e.Lease})
			e.Notes = append(e.Notes, notes...)
		case Delete:
			err = inv.deleteLeaked(ctx, e.Driver, e.BackendInstance)
		default:
			continue
		}
		if err != nil {
			e.Error = err.Error()
			failures++
			continue
		}
		e.Done = true
	}
	if failures > 0 {
		return rep, fmt.Errorf("%d of the v1 leases could not be taken over; see the report", failures)
	}
	return rep, nil
}

// deleteLeaked deletes a VM v1's database calls its own (a lease it is
// done with), through the driver that listed it: only a VM the backend
// listed when the inventory was taken.
func (inv *Inventory) deleteLeaked(ctx context.Context, driver, vm string) error {
	d := inv.owner[driver][vm]
	if d == nil {
		return fmt.Errorf("the %s driver no longer lists %s", driver, vm)
	}
	if err := d.Delete(ctx, vm); err != nil && !errors.Is(err, drivers.ErrNotFound) {
		return err
	}
	return nil // deleted, or gone already: what deleting wanted
}
