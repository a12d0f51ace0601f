package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/reconcile/snapshots"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// CloneRequest asks for a new sandbox whose VM starts as a copy of
// another sandbox's disk.
type CloneRequest struct {
	Source string
	// Name is the new sandbox's ("": the first free SOURCE-clone-N).
	Name string
	// Snapshot copies the disk as it was in one of the source's snapshots
	// ("": as it is now).
	Snapshot string
	// TTL is the new lease's length (nil: the source's lease length).
	TTL *time.Duration
	// Audit names the door that asked, for the workspace's history.
	Audit *Audit
}

// Clone declares a new ad-hoc sandbox like its source (its VM keys,
// network, runtime, services and compose; not its host ports, which are
// the source's), leases it, and converges it: its VM is created as a copy
// of the source's disk (clone_of, from_snapshot), counted against [lease]
// max_instances like any create. A clone that cannot be made leaves
// nothing behind. It returns the new sandbox's name.
func (e *Engine) Clone(ctx context.Context, ws spec.Options, req CloneRequest) (*Result, string, error) {
	now := e.Clock.Now()
	looked, r, err := e.read(ws, now)
	if err != nil {
		return nil, "", err
	}
	checks := snapshots.CloneChecks{Now: now, Leases: leaseRules{}, Drivers: e.Drivers}
	name, err := checks.Check(r, looked.File, snapshots.Clone{Source: req.Source, Name: req.Name,
		Snapshot: req.Snapshot, TTL: req.TTL})
	if err != nil {
		return nil, name, err
	}
	opts := Options{Targets: []string{name}, read: &firstRead{now: now, r: r, looked: looked}, Audit: req.Audit,
		Intent: engineEdit{op: "clone", targets: []string{name}, change: cloneEdit(req, name), undoFailed: true}}
	res, err := e.Apply(ctx, ws, opts)
	if res != nil && res.Plan != nil && hasProblem(res, name) {
		// The plan could not make it (its source went meanwhile): the
		// declaration goes too, or it would stay a problem in every plan.
		undo := Options{Targets: opts.Targets, Intent: Destroy{Sandboxes: opts.Targets}}
		if _, uerr := e.Apply(context.WithoutCancel(ctx), ws, undo); uerr != nil {
			err = errors.Join(err, fmt.Errorf("dropping the clone %s: %w", name, uerr))
		}
	}
	if err != nil {
		return res, name, fmt.Errorf("cloning %s as %s: %w", req.Source, name, err)
	}
	return res, name, nil
}

// cloneEdit declares the clone and acquires its lease. It checks again
// against the document as it is when written, so two clones never take
// one name.
func cloneEdit(req CloneRequest, name string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r := c.Resolved
		if err := live(r, c.State, req.Source, c.Now); err != nil {
			return err
		}
		if err := snapshots.NameFree(r, c.State, name); err != nil {
			return err
		}
		keys := snapshots.CloneKeys(r.Config.Sandboxes[req.Source])
		keys["clone_of"] = req.Source
		if req.Snapshot != "" {
			keys["from_snapshot"] = req.Source + "/" + req.Snapshot
		}
		m.Declare(name, keys)
		ttl := cloneTTL(m, r, req.Source, c.Now)
		if req.TTL != nil {
			ttl = *req.TTL
		}
		m.SetLease(name, renew(spec.LeaseRecord{}, false, ttl, c.Now))
		return nil
	}
}

// cloneTTL is the source's lease length: its declared ttl, else the
// length of the lease it holds (an ad-hoc sandbox keeps its ttl only
// there: create_instance's ttl_minutes is never declared), within
// lease.max_ttl; a clone of a 30-minute instance must not get the
// workspace's default.
func cloneTTL(m *spec.Managed, r *spec.Resolved, source string, now time.Time) time.Duration {
	if r.Config.Sandboxes[source].TTL.Std() > 0 {
		return leaseTTL(r, source)
	}
	if cur, held := heldLease(m, r, source, now); held && cur.ExpiresAt.After(cur.AcquiredAt) {
		return min(cur.ExpiresAt.Sub(cur.AcquiredAt), r.Config.Lease.MaxTTL.Std())
	}
	return leaseTTL(r, source)
}

// leaseRules are the engine's lease checks, as a clone's checks ask them.
type leaseRules struct{}

func (leaseRules) Live(r *spec.Resolved, rec *state.File, name string, now time.Time) error {
	return live(r, rec, name, now)
}

func (leaseRules) TTLInvalid(r *spec.Resolved, ttl time.Duration, why string) error {
	return ttlInvalid(r, ttl, "", why)
}

func hasProblem(res *Result, sandbox string) bool {
	for _, p := range res.Plan.Problems {
		if p.Sandbox == sandbox {
			return true
		}
	}
	return false
}
