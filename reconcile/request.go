package reconcile

import (
	"maps"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Request is what a front door asks of the engine, in the engine's terms:
// the engine turns it into an edit of the desired state, deciding what a
// door never does — the lease policy's bounds, whether a sandbox holds a
// live lease, the bootstrap a new ad-hoc sandbox gets — then plans it and,
// for Apply, carries it out. Its errors are coded and carry the details
// SandboxForge v1's clients know (sandbox, status, ttl_minutes …), so a
// door only renames fields.
type Request struct {
	Op Op
	// Sandboxes are the sandboxes asked about; empty means every sandbox
	// the files declare, where the operation allows it.
	Sandboxes []string
	// TTL is, for Up, the lease length (nil: each sandbox's own); for
	// Extend, how much later the lease ends.
	TTL *time.Duration
	// Keys are [vm] keys of the sandboxes Up declares ad hoc (cpus …).
	Keys map[string]any
	// Bootstrap gives the ad-hoc sandboxes of Up and Prepare
	// SandboxForge v1's bootstrap as desired layers.
	Bootstrap *Bootstrap
	// All drains every spare the drivers list, not only the workspace's
	// pools' (DrainPools).
	All bool
}

// Op is what a request does to the desired state.
type Op string

const (
	// Reconcile changes no lease: the loop's pass, `sbf reconcile`, and
	// what status and health look at. No request means it: a Request with
	// no Op is refused, so a door that forgot to say what it wants never
	// gets a loop pass (which leaves busy sandboxes alone).
	Reconcile Op = "reconcile"
	// Keep changes no lease either, but is a person's run rather than the
	// loop's: `sbf plan|apply --no-renew` (drift only). It waits for
	// sandboxes another run holds instead of skipping them.
	Keep Op = "keep"
	// Renew acquires or renews the leases of the sandboxes it converges:
	// `sbf apply`, MCP apply.
	Renew Op = "renew"
	// Up declares unknown names ad hoc and acquires their leases.
	Up Op = "up"
	// Destroy drops leases (and ad-hoc declarations).
	Destroy Op = "destroy"
	// Extend moves one live lease's end later.
	Extend Op = "extend"
	// Prepare converges a live sandbox's layers, never renewing its lease.
	Prepare Op = "prepare"
	// FillPools makes the spares the workspace's pools lack and deletes
	// idle, stray or surplus ones: a plan of it is `sbf pool status`.
	FillPools Op = "fill-pools"
	// DrainPools deletes the spares of the workspace's pools (with All,
	// every spare the drivers list).
	DrainPools Op = "drain-pools"
)

// pools says whether an operation is a pool pass.
func pools(op Op) bool { return op == FillPools || op == DrainPools }

// Bootstrap is SandboxForge v1's bootstrap of an ad-hoc sandbox: the
// container runtime, and the workspace's [infra] services when Services
// and [infra] include_services_by_default both say so.
type Bootstrap struct {
	Services bool
}

// edit decides what a request changes, checked against the desired state
// before it (r) at now; nil for a request that edits nothing.
func (e *Engine) edit(req Request, r *spec.Resolved, rec *state.File, now time.Time) (Edit, error) {
	switch req.Op {
	case Reconcile, Keep, FillPools, DrainPools:
		return nil, nil
	case Renew:
		return renewEdit(req.Sandboxes), nil
	case Destroy:
		return destroyEdit(req.Sandboxes), nil
	case Up:
		var ttl time.Duration
		if req.TTL != nil {
			if ttl = *req.TTL; ttl <= 0 || ttl > r.Config.Lease.MaxTTL.Std() {
				return nil, ttlInvalid(r, ttl, "a lease lasts longer than zero and at most lease.max_ttl")
			}
		}
		keys := maps.Clone(req.Keys)
		if req.Bootstrap != nil {
			boot, err := e.bootstrapKeys(r, keys, req.Bootstrap.Services)
			if err != nil {
				return nil, err
			}
			keys = mergeKeys(keys, boot)
		}
		return upEdit(req.Sandboxes, ttl, keys), nil
	case Extend:
		name, err := one(req)
		if err != nil {
			return nil, err
		}
		if err := live(r, rec, name, now); err != nil {
			return nil, err
		}
		var by time.Duration
		if req.TTL != nil {
			by = *req.TTL
		}
		return extendEdit(name, by), nil
	case Prepare:
		name, err := one(req)
		if err != nil {
			return nil, err
		}
		if err := live(r, rec, name, now); err != nil {
			return nil, err
		}
		if !r.AdHoc[name] || req.Bootstrap == nil {
			return nil, nil
		}
		boot, err := e.bootstrapKeys(r, nil, req.Bootstrap.Services)
		if err != nil {
			return nil, err
		}
		return layersEdit(name, boot), nil
	}
	if req.Op == "" {
		return nil, coded.New(coded.InvalidArguments, nil, "the engine was asked nothing: a request names its Op")
	}
	return nil, coded.New(coded.InvalidArguments, map[string]any{"op": string(req.Op)}, "unknown request %q", req.Op)
}

// live says whether a sandbox holds a live lease: INSTANCE_NOT_FOUND for
// a name never declared nor recorded, INSTANCE_TERMINAL (destroyed or
// expired) for one that was, as CheckLease words it.
func live(r *spec.Resolved, rec *state.File, name string, now time.Time) error {
	if _, declared := r.Config.Sandboxes[name]; !declared && (rec == nil || rec.Sandboxes[name] == nil) {
		return notDeclared(r, name)
	}
	if err := CheckLease(r, name, now); err != nil {
		return err
	}
	return nil
}

// bootstrapKeys decides an ad-hoc sandbox's bootstrap for the backend it
// will run on ([vm], or the driver its keys name).
func (e *Engine) bootstrapKeys(r *spec.Resolved, keys map[string]any, services bool) (map[string]any, error) {
	driver := r.Config.VM.Driver
	if d, ok := keys["driver"].(string); ok && d != "" {
		driver = d
	}
	drv, err := e.Drivers(r.Host.ResolveDriver(driver), r)
	if err != nil {
		return nil, err
	}
	return BootstrapKeys(r, drv, services), nil
}

func mergeKeys(a, b map[string]any) map[string]any {
	if a == nil && b == nil {
		return nil
	}
	out := map[string]any{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// one is the single sandbox a request about one sandbox names.
func one(req Request) (string, error) {
	if len(req.Sandboxes) != 1 {
		return "", coded.New(coded.InvalidArguments, map[string]any{"sandboxes": req.Sandboxes},
			"%s takes exactly one sandbox, got %d", req.Op, len(req.Sandboxes))
	}
	return req.Sandboxes[0], nil
}

// TTL is a request's lease length or extension.
func TTL(d time.Duration) *time.Duration { return &d }
