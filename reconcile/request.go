package reconcile

import (
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Intent is what a front door asks of the engine, in the engine's terms:
// one type per intent (Up, Destroy, Extend …), so a request says what it
// is by its type and carries only the fields that intent has. The engine
// turns it into an edit of the desired state, deciding what a door never
// does — the lease policy's bounds, whether a sandbox holds a live lease,
// the bootstrap a new ad-hoc sandbox gets — then plans it and, for Apply,
// carries it out. A nil Intent is refused: no zero value means a loop
// pass. Its errors are coded and carry the details SandboxForge v1's
// clients know (sandbox, status, ttl_minutes …), so a door only renames
// fields.
type Intent interface {
	// Op names the intent in errors and the history.
	Op() string
	// named are the sandboxes the intent is about; none means every
	// sandbox the files declare, where the intent allows it.
	named() []string
	// edit decides what the intent changes, checked against the desired
	// state before it (r) at now; nil for one that edits nothing.
	edit(e *Engine, r *spec.Resolved, rec *state.File, now time.Time) (Edit, error)
}

// Reconcile changes no lease: the loop's pass, `sbf reconcile`, and what
// status and health look at. It leaves sandboxes another run holds alone.
type Reconcile struct{}

// Keep changes no lease either, but is a person's run rather than the
// loop's: `sbf plan|apply --no-renew` (drift only), docker_compose up of
// the engine's stack. It waits for sandboxes another run holds instead of
// skipping them.
type Keep struct {
	Sandboxes []string
	All       bool // every sandbox, named none
}

// Renew acquires or renews the leases of the sandboxes it converges:
// `sbf apply`, MCP apply.
type Renew struct {
	Sandboxes []string
	All       bool // every sandbox declared, named none
}

// Up declares unknown names ad hoc and acquires their leases.
type Up struct {
	Sandboxes []string
	All       bool // every sandbox declared, named none
	// TTL is the lease length; nil gives each sandbox its own.
	TTL *time.Duration
	// TTLAsGiven is TTL as the request wrote it (48h; 90 minutes), which a
	// refusal quotes rather than a unit nobody typed; "" words TTL.
	TTLAsGiven string
	// Keys are [vm] keys of the sandboxes Up declares ad hoc (cpus …).
	Keys map[string]any
	// Bootstrap gives the ad-hoc sandboxes SandboxForge v1's bootstrap as
	// desired layers.
	Bootstrap *Bootstrap
}

// Destroy drops leases (and ad-hoc declarations). Force deletes the VMs
// at once, without a clean stop (docker rm -f, limactl delete --force).
type Destroy struct {
	Sandboxes []string
	All       bool // every sandbox, named none
	Force     bool
}

// Extend moves one live lease's end later, By later.
type Extend struct {
	Sandbox string
	By      time.Duration
	// ByAsGiven is By as the request wrote it, quoted by a refusal.
	ByAsGiven string
}

// Prepare converges a live sandbox's layers, never renewing its lease;
// Bootstrap gives an ad-hoc one v1's bootstrap.
type Prepare struct {
	Sandbox   string
	Bootstrap *Bootstrap
}

// FillPools makes the spares the workspace's pools lack and deletes idle,
// stray or surplus ones: a plan of it is `sbf pool status`.
type FillPools struct{}

// DrainPools deletes the spares of the workspace's pools; with All, every
// spare the drivers list.
type DrainPools struct{ All bool }

// engineEdit is an edit the engine made itself (an adoption, a clone).
type engineEdit struct {
	op      string
	targets []string
	change  Edit
	// undoFailed rolls back a create that fails (a clone's; an adoption
	// takes a VM that exists and is retried instead).
	undoFailed bool
}

func (Reconcile) Op() string  { return "reconcile" }
func (Keep) Op() string       { return "keep" }
func (Renew) Op() string      { return "renew" }
func (Up) Op() string         { return "up" }
func (Destroy) Op() string    { return "destroy" }
func (Extend) Op() string     { return "extend" }
func (Prepare) Op() string    { return "prepare" }
func (FillPools) Op() string  { return "fill-pools" }
func (DrainPools) Op() string { return "drain-pools" }
func (i engineEdit) Op() string {
	return i.op
}

func (Reconcile) named() []string    { return nil }
func (i Keep) named() []string       { return i.Sandboxes }
func (i Renew) named() []string      { return i.Sandboxes }
func (i Up) named() []string         { return i.Sandboxes }
func (i Destroy) named() []string    { return i.Sandboxes }
func (i Extend) named() []string     { return []string{i.Sandbox} }
func (i Prepare) named() []string    { return []string{i.Sandbox} }
func (FillPools) named() []string    { return nil }
func (DrainPools) named() []string   { return nil }
func (i engineEdit) named() []string { return i.targets }

func (Reconcile) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) { return nil, nil }
func (Keep) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error)      { return nil, nil }
func (FillPools) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) { return nil, nil }
func (DrainPools) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) {
	return nil, nil
}
func (i engineEdit) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) {
	return i.change, nil
}

func (i Renew) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) {
	return renewEdit(i.Sandboxes), nil
}

func (i Destroy) edit(*Engine, *spec.Resolved, *state.File, time.Time) (Edit, error) {
	return destroyEdit(i.Sandboxes), nil
}

func (i Up) edit(e *Engine, r *spec.Resolved, _ *state.File, _ time.Time) (Edit, error) {
	var ttl time.Duration
	if i.TTL != nil {
		if ttl = *i.TTL; ttl <= 0 || ttl > r.Config.Lease.MaxTTL.Std() {
			return nil, ttlInvalid(r, ttl, i.TTLAsGiven, "a lease lasts longer than zero and at most lease.max_ttl")
		}
	}
	if err := sizeWithinCeilings(r, i.Keys); err != nil {
		return nil, err
	}
	keys := maps.Clone(i.Keys)
	if i.Bootstrap != nil {
		boot, err := e.bootstrapKeys(r, keys, i.Bootstrap.Services)
		if err != nil {
			return nil, err
		}
		keys = mergeKeys(keys, boot)
	}
	return upEdit(i.Sandboxes, ttl, keys), nil
}

func (i Extend) edit(_ *Engine, r *spec.Resolved, rec *state.File, now time.Time) (Edit, error) {
	if err := live(r, rec, i.Sandbox, now); err != nil {
		return nil, err
	}
	return extendEdit(i.Sandbox, i.By, i.ByAsGiven), nil
}

func (i Prepare) edit(e *Engine, r *spec.Resolved, rec *state.File, now time.Time) (Edit, error) {
	if err := live(r, rec, i.Sandbox, now); err != nil {
		return nil, err
	}
	if !r.AdHoc[i.Sandbox] || i.Bootstrap == nil {
		return nil, nil
	}
	boot, err := e.bootstrapKeys(r, nil, i.Bootstrap.Services)
	if err != nil {
		return nil, err
	}
	return layersEdit(i.Sandbox, boot), nil
}

// forced says whether a run deletes VMs without a clean stop.
func forced(in Intent) bool {
	d, ok := in.(Destroy)
	return ok && d.Force
}

// isPools says whether an intent is a pool pass.
func isPools(in Intent) bool {
	switch in.(type) {
	case FillPools, DrainPools:
		return true
	}
	return false
}

// Bootstrap is SandboxForge v1's bootstrap of an ad-hoc sandbox: the
// container runtime, and the workspace's [infra] services when Services
// and [infra] include_services_by_default both say so.
type Bootstrap struct {
	Services bool
}

// intentEdit decides what an intent changes; a nil intent is refused.
func (e *Engine) intentEdit(in Intent, r *spec.Resolved, rec *state.File, now time.Time) (Edit, error) {
	if in == nil {
		return nil, coded.New(coded.InvalidArguments, nil, "the engine was asked nothing: a run names its Intent")
	}
	if err := namesSomething(in); err != nil {
		return nil, err
	}
	return in.edit(e, r, rec, now)
}

// everyone is an intent that acts on every sandbox when it names none, and
// must say so (All): its zero value asks nothing.
type everyone interface{ all() bool }

func (i Keep) all() bool    { return i.All }
func (i Renew) all() bool   { return i.All }
func (i Up) all() bool      { return i.All }
func (i Destroy) all() bool { return i.All }

// namesSomething refuses an intent's zero value: a name is never empty,
// and an intent naming no sandbox acts on every one only when it says All
// (a door that lost its list must not destroy a workspace).
func namesSomething(in Intent) error {
	names, details := in.named(), map[string]any{"op": in.Op()}
	if slices.Contains(names, "") {
		return coded.New(coded.InvalidArguments, details, "%s names an empty sandbox", in.Op())
	}
	ev, ok := in.(everyone)
	switch {
	case !ok:
		return nil
	case len(names) == 0 && !ev.all():
		return coded.New(coded.InvalidArguments, details, "%s names no sandbox: name them, or ask for every one",
			in.Op())
	case len(names) > 0 && ev.all():
		return coded.New(coded.InvalidArguments, details, "%s names sandboxes and asks for every one", in.Op())
	}
	return nil
}

// live says whether a sandbox holds a live lease: INSTANCE_NOT_FOUND for
// a name never declared nor recorded, INSTANCE_TERMINAL (destroyed or
// expired) for one that was, as CheckLease words it.
func live(r *spec.Resolved, rec *state.File, name string, now time.Time) error {
	if _, declared := r.Config.Sandboxes[name]; !declared && !recorded(r, rec, name) {
		return notDeclared(r, name)
	}
	if err := CheckLease(r, name, now); err != nil {
		return err
	}
	return nil
}

// recorded says whether the state records a sandbox, or the archive of
// ended ones does: read only for a name the state does not record.
func recorded(r *spec.Resolved, rec *state.File, name string) bool {
	if rec != nil && rec.Sandboxes[name] != nil {
		return true
	}
	_, ended, err := state.Ended(filepath.Join(r.Root, spec.Dir), name)
	return err == nil && ended
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

// TTL is an Up's lease length.
func TTL(d time.Duration) *time.Duration { return &d }

// decided fills in what the engine decides from the intent, not the door:
// the sandboxes it acts on (those the intent names) and whether a failed
// create is undone (an Up's and a clone's are).
func decided(opts Options) Options {
	if len(opts.Targets) == 0 && opts.Intent != nil {
		opts.Targets = opts.Intent.named()
	}
	switch in := opts.Intent.(type) {
	case Up:
		opts.rollback = true
	case engineEdit:
		opts.rollback = in.undoFailed
	}
	return opts
}

// resolvedOnce resolves ws's root for every step of a request; a root that
// cannot be resolved is left for the first step to refuse in its words.
func resolvedOnce(ws spec.Options) spec.Options {
	if r, err := ws.Resolved(); err == nil {
		return r
	}
	return ws
}
