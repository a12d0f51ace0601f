package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// Backends builds drivers from the registry: each once per process, or
// once per workspace for a backend that keeps its world there (sim). env
// is completed with the workspace's root.
func Backends(ctx context.Context, env drivers.Env) DriverFactory { return OpenBackends(ctx, env).Get }

// BackendSet is the drivers one process built, closed together when it
// is done (a plugin's process, kept connections).
type BackendSet struct {
	Get   DriverFactory
	mu    sync.Mutex
	cache map[string]Driver
	// life is what drivers are built with: the opener's values without
	// its cancellation, since a driver outlives the request that first
	// needed it (an interrupted run still finishes its steps with it);
	// Close ends them.
	life context.Context
}

// OpenBackends is Backends with a way to close what it built.
func OpenBackends(ctx context.Context, env drivers.Env) *BackendSet {
	set := &BackendSet{cache: map[string]Driver{}, life: context.WithoutCancel(ctx)}
	set.Get = set.factory(env)
	return set
}

// Close closes every driver built that can be closed.
func (b *BackendSet) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for key, d := range b.cache {
		if c, ok := d.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
		delete(b.cache, key)
	}
	return errors.Join(errs...)
}

func (b *BackendSet) factory(env drivers.Env) DriverFactory {
	mu, cache := &b.mu, b.cache
	return func(name string, r *spec.Resolved) (Driver, error) {
		reg, ok := drivers.Lookup(name)
		if !ok {
			return nil, drivers.NotBuiltIn(name)
		}
		e := env
		if r != nil {
			e.Workspace = r.Root
		}
		key := name
		if reg.PerWorkspace {
			key += "\x00" + e.Workspace
		}
		mu.Lock()
		defer mu.Unlock()
		if d, ok := cache[key]; ok {
			return d, nil
		}
		d, err := reg.New(b.life, e)
		if err != nil {
			return nil, err
		}
		cache[key] = d
		return d, nil
	}
}

// Diagnose asks every backend the workspace's sandboxes use whether it can
// run their VMs here (sbf doctor): one diagnosis per backend, sorted.
func Diagnose(ctx context.Context, env drivers.Env, r *spec.Resolved) []drivers.Diagnosis {
	if len(r.Config.Sandboxes) == 0 {
		// Nothing declared yet: ask about the VM [vm] describes.
		copied := *r
		copied.Config.Sandboxes = map[string]spec.Sandbox{"example": {VM: r.Config.VM}}
		r = &copied
	}
	env.Workspace = r.Root
	byDriver := map[string][]plan.DesiredSandbox{}
	for _, sb := range plan.DesiredFrom(r).Sandboxes {
		byDriver[sb.Driver] = append(byDriver[sb.Driver], sb)
	}
	var out []drivers.Diagnosis
	for _, name := range slices.Sorted(maps.Keys(byDriver)) {
		out = append(out, diagnoseOne(ctx, env, name, byDriver[name]))
	}
	return out
}

// DiagnoseHost checks whether this host could run each real backend the
// workspace does not use (sbf doctor --all): the host's side only, no VM
// of the workspace's.
func DiagnoseHost(
	ctx context.Context,
	env drivers.Env,
	r *spec.Resolved,
	skip []drivers.Diagnosis,
) []drivers.Diagnosis {
	env.Workspace = r.Root
	var out []drivers.Diagnosis
	for _, name := range drivers.Names() {
		reg, _ := drivers.Lookup(name)
		if reg.TestOnly || slices.ContainsFunc(skip, func(d drivers.Diagnosis) bool { return d.Driver == name }) {
			continue
		}
		out = append(out, diagnoseOne(ctx, env, name, nil))
	}
	return out
}

func diagnoseOne(ctx context.Context, env drivers.Env, name string, sandboxes []plan.DesiredSandbox) drivers.Diagnosis {
	var specs []drivers.Spec
	for _, sb := range sandboxes {
		specs = append(specs, sb.VM)
	}
	d := diagnoseDriver(ctx, env, name, specs)
	checks := egressChecks(ctx, env, name, sandboxes)
	if len(checks) == 0 {
		return d
	}
	usable := d.Usable
	for _, c := range checks {
		d.Add(c)
	}
	if d.Finish(); usable && !d.Usable {
		d.Summary = "can run VMs here, but cannot enforce a sandbox's network policy"
	}
	return d
}

// egressChecks says, for each sandbox with a network policy, whether its
// driver enforces it here: the answer apply would give (POLICY_UNSUPPORTED).
// Messages and next steps name the sandbox, as the spec does, not its VM.
func egressChecks(ctx context.Context, env drivers.Env, name string, sandboxes []plan.DesiredSandbox) []drivers.Check {
	var out []drivers.Check
	for _, sb := range sandboxes {
		if sb.VM.Egress == nil {
			continue
		}
		c := drivers.Check{Name: "network policy", Status: drivers.CheckOK,
			Detail: sb.Name + ": egress = " + sb.VM.Egress.String() + " enforced outside the guest"}
		reg, _ := drivers.Lookup(name)
		drv, err := reg.New(ctx, env)
		if err == nil {
			err = egressEnforced(ctx, drivers.CapabilitiesOf(drv), plan.DesiredSandbox{Name: sb.Name, Driver: name, VM: sb.VM})
		}
		if err != nil {
			c = drivers.CheckFromError("network policy", fmt.Errorf("%s: %w", sb.Name, err))
			c.NextSteps, _ = coded.Of(err, coded.Unknown).Details["next_steps"].([]string)
		}
		out = append(out, c)
	}
	return out
}

func diagnoseDriver(ctx context.Context, env drivers.Env, name string, specs []drivers.Spec) drivers.Diagnosis {
	reg, ok := drivers.Lookup(name)
	if ok && reg.Diagnose != nil {
		return reg.Diagnose(ctx, env, specs)
	}
	d := drivers.Diagnosis{Driver: name, Summary: "usable"}
	var err error = drivers.NotBuiltIn(name)
	if ok {
		_, err = reg.New(ctx, env)
	}
	if err != nil {
		d.Summary = "cannot run VMs here"
		d.Add(drivers.CheckFromError("driver", err))
	}
	d.Finish()
	return d
}
