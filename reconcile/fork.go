package reconcile

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/reconcile/snapshots"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// MaxForkChildren bounds the children of one fork.
const MaxForkChildren = snapshots.MaxForkChildren

// ForkRequest asks for running copies of a running sandbox, memory and
// all (sbf fork, fork_instance).
type ForkRequest struct {
	Source string
	// Count is how many children (1 to MaxForkChildren; 0 is refused).
	Count int
	// NamePrefix names the children PREFIX-1, PREFIX-2 … ("": SOURCE-fork).
	NamePrefix string
	// TTL is each child's lease length (nil: the source's lease length).
	TTL *time.Duration
	// DryRun decides and checks everything a fork would (the names, the
	// leases, the capability, the policy, that the source runs) and makes,
	// locks and records nothing: the children in the result are those a
	// fork would make now. The host's cap is counted only by a fork itself.
	DryRun bool
	// Audit names the door that asked, for the workspace's history.
	Audit *Audit
}

// ForkResult is what a fork made.
type ForkResult struct {
	Source   string
	Children []ForkedChild
	// Paused is how long the source was held for its state to be saved.
	Paused time.Duration
}

// ForkedChild is one child: a new ad-hoc sandbox, running.
type ForkedChild struct {
	Sandbox   string    `json:"sandbox"`
	Instance  string    `json:"instance"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Progress kinds a fork reports (Event.Kind): the source's save, then
// each child's start; Step and Steps count them (1 + Count).
const (
	ForkSave  plan.Kind = "save"
	ForkChild plan.Kind = "fork"
)

// Fork copies a running sandbox into Count new ad-hoc sandboxes from its
// memory: the source pauses while its state is saved once, then runs on;
// each child starts from that state without a boot (drivers.Forker). The
// engine decides what a door does not: the source holds a live lease and
// runs; its backend forks (FORK_UNSUPPORTED with the next step, before
// anything is made); each child is declared like its source (its VM keys,
// network policy and mounts; not its host ports, as a clone) with a lease
// of its own within lease.max_ttl; every child is admitted under the host's
// cap before any is made, so a fork refused at the cap leaves nothing. A
// failed fork removes every child it made; a cancelled one (ctx) keeps the
// children already running and undoes the rest. Each child gets its own
// record and history line.
func (e *Engine) Fork(ctx context.Context, ws spec.Options, req ForkRequest) (*ForkResult, error) {
	start := e.Clock.Now()
	f := &forking{e: e, req: req, res: &ForkResult{Source: req.Source}}
	err := f.run(ctx, resolvedOnce(ws))
	if err != nil {
		err = fmt.Errorf("forking %s: %w", req.Source, err)
	}
	if !req.DryRun {
		e.auditFork(ctx, ws, f, err, start)
	}
	return f.res, err
}

// forking is one fork on its way.
type forking struct {
	e     *Engine
	req   ForkRequest
	res   *ForkResult
	names []string // the children's sandboxes, all asked for
	r     *spec.Resolved
	rec   *state.File
	now   time.Time
}

func (f *forking) run(ctx context.Context, ws spec.Options) error {
	e := f.e
	if !spec.ValidSandboxName(f.req.Source) {
		return coded.New(coded.InvalidArguments, map[string]any{"field": "source", "value": coded.Clip(f.req.Source)},
			"a fork names its source sandbox, and %q names none", coded.Clip(f.req.Source))
	}
	root, _, err := ws.Identity()
	if err != nil {
		return err
	}
	// The source's lock first: forks of one source (and any run changing
	// it) take turns, so the children's names are decided once, under it.
	// A dry run looks, as a plan does.
	dir := filepath.Join(root, spec.Dir)
	if !f.req.DryRun {
		held, err := e.locks().Sandboxes(ctx, dir, []string{f.req.Source}, admission.WaitBusy)
		if err != nil {
			return err
		}
		defer held.Release()
	}
	f.now = e.Clock.Now()
	looked, r, err := e.read(ws, f.now)
	if err != nil {
		return err
	}
	f.r, f.rec = r, looked.File
	checks := snapshots.ForkChecks{Now: f.now, Leases: leaseRules{}, Drivers: e.Drivers}
	ask := snapshots.Fork{Source: f.req.Source, Count: f.req.Count, NamePrefix: f.req.NamePrefix, TTL: f.req.TTL}
	names, forker, err := checks.Check(r, f.rec, ask)
	if err != nil {
		return err
	}
	f.names = names
	if !f.req.DryRun {
		children, err := e.locks().Sandboxes(ctx, dir, names, admission.WaitBusy)
		if err != nil {
			return err
		}
		defer children.Release()
	}
	return f.makeChildren(ctx, forker)
}

// edit declares the children like the source and leases each.
func (f *forking) edit(children []string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r, source := c.Resolved, f.req.Source
		if err := live(r, c.State, source, c.Now); err != nil {
			return err
		}
		ttl := cloneTTL(m, r, source, c.Now)
		if f.req.TTL != nil {
			ttl = *f.req.TTL
		}
		for _, name := range children {
			if err := snapshots.NameFree(r, c.State, name); err != nil {
				return err
			}
			m.Declare(name, snapshots.CloneKeys(r.Config.Sandboxes[source]))
			m.SetLease(name, renew(spec.LeaseRecord{}, false, ttl, c.Now))
		}
		return nil
	}
}

// declared is the workspace with children declared and leased (in
// memory only): what their VMs are, as every later plan will want them.
func (f *forking) declared(children []string) (*spec.Resolved, error) {
	managed, err := f.r.Managed()
	if err != nil {
		return nil, err
	}
	if err := f.edit(children)(managed, EditContext{Resolved: f.r, State: f.rec, Now: f.now}); err != nil {
		return nil, err
	}
	return f.r.WithManaged(managed)
}

// record declares and leases the children made, then records each as
// running with its source's layers (its memory and disk are the source's).
func (f *forking) record(ctx context.Context, made []string, specs map[string]drivers.Spec) error {
	e, r := f.e, f.r
	after, err := f.declared(made)
	if err != nil {
		return err
	}
	if err := e.writeEdit(ctx, r, after, f.rec, f.edit(made), f.now); err != nil {
		return err
	}
	store, err := state.Open(ctx, filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID, e.holder(), e.LockTimeout)
	if err != nil {
		return err
	}
	defer store.Close()
	now := e.Clock.Now().UTC()
	src := f.rec.Sandboxes[f.req.Source]
	err = store.Write(func(tx *state.Tx) {
		for _, name := range made {
			rec := tx.Sandbox(name)
			rec.Driver, rec.Instance, rec.Phase = src.Driver, specs[name].Name, state.Running
			rec.VM, rec.Applied, rec.CreatedAt, rec.LastError = state.RecordOf(specs[name]), maps.Clone(src.Applied),
				&now, ""
			if src.Guest != nil {
				guest := *src.Guest
				rec.Guest = &guest
			}
			end := after.Config.Leases[name].ExpiresAt
			rec.ExpiresAt = &end
			f.res.Children = append(f.res.Children, ForkedChild{Sandbox: name, Instance: rec.Instance, ExpiresAt: end})
		}
	})
	if err != nil {
		return fmt.Errorf("recording the children %v: %w", made, err)
	}
	return nil
}

// auditFork writes one history line per child asked for: forked, or the
// error that stopped the fork before it was made.
func (e *Engine) auditFork(ctx context.Context, ws spec.Options, f *forking, err error, start time.Time) {
	kept, done := []string{}, &plan.Plan{}
	for _, c := range f.res.Children {
		kept = append(kept, c.Sandbox)
		done.Actions = append(done.Actions, plan.Action{Sandbox: c.Sandbox, Kind: ForkChild})
	}
	if len(kept) > 0 {
		res := &Result{Resolved: f.r, Plan: done}
		e.audit(ctx, ws, Options{Intent: engineEdit{op: "fork", targets: kept}, Audit: f.req.Audit}, res, nil, start)
	}
	rest := slices.DeleteFunc(slices.Clone(f.names), func(n string) bool { return slices.Contains(kept, n) })
	if len(f.names) == 0 && f.req.Source != "" {
		rest = []string{f.req.Source} // refused before any child was named
	}
	if len(rest) > 0 && err != nil {
		e.audit(ctx, ws, Options{Intent: engineEdit{op: "fork", targets: rest}, Audit: f.req.Audit}, nil, err, start)
	}
}
