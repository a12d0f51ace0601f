package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
)

// Lister is the part of a driver observation needs.
type Lister interface {
	List(ctx context.Context) ([]drivers.Instance, error)
}

// Observe lists each driver once (the planner keeps what belongs to this
// workspace: see plan.NewObserved).
func Observe(
	ctx context.Context,
	workspaceID string,
	driverNames []string,
	get func(string) (Lister, error),
) plan.Observed {
	listed := map[string][]drivers.Instance{}
	failed := map[string]error{}
	labels, templates := map[string]bool{}, map[string]bool{}
	for _, name := range driverNames {
		if _, done := listed[name]; done || failed[name] != nil {
			continue
		}
		l, err := get(name)
		if err == nil {
			_, labels[name] = l.(drivers.Labeler) // a Lister, not a Driver: CapabilitiesOf does not apply
			_, templates[name] = l.(drivers.Templater)
			var list []drivers.Instance
			readcount.Add(readcount.List)
			if list, err = l.List(ctx); err == nil {
				listed[name] = append([]drivers.Instance{}, list...)
				continue
			}
		}
		failed[name] = err
	}
	obs := plan.NewObserved(workspaceID, listed, failed, labels)
	obs.Templates = templates
	return obs
}

// ValidateSpecs asks each available backend that can check specs about
// the sandboxes it would run.
func ValidateSpecs(ctx context.Context, d plan.Desired, unavailable map[string]error,
	get func(string) (Driver, error)) map[string]error {
	out := map[string]error{}
	type backend struct {
		caps drivers.Capabilities
		ok   bool
	}
	backends := map[string]backend{} // by driver: looked up once, not once per sandbox
	for name, ds := range d.Sandboxes {
		if unavailable[ds.Driver] != nil {
			continue
		}
		b, seen := backends[ds.Driver]
		if !seen {
			if drv, err := get(ds.Driver); err == nil { // else reported as unavailable by observation
				b = backend{caps: drivers.CapabilitiesOf(drv), ok: true}
			}
			backends[ds.Driver] = b
		}
		if !b.ok {
			continue
		}
		if err := egressEnforced(ctx, b.caps, ds); err != nil {
			out[name] = err
			continue
		}
		if v := b.caps.Validate; v != nil {
			if err := v.Validate(ctx, ds.VM); err != nil {
				out[name] = err
			}
		}
	}
	return out
}

// egressEnforced refuses a network policy the sandbox's driver cannot
// enforce outside the guest: a rule nobody enforces is worse than none.
func egressEnforced(ctx context.Context, caps drivers.Capabilities, ds plan.DesiredSandbox) error {
	e := ds.VM.Egress
	if e == nil {
		return nil
	}
	steps := []string{"use a driver that enforces it (lima with QEMU on Linux; see docs/egress.md)",
		fmt.Sprintf("or set [sandboxes.%s.network] egress = \"allow\" (no restriction)", ds.Name)}
	details := map[string]any{"driver": ds.Driver, "egress": e.Mode, "next_steps": steps}
	enf := caps.EnforceEgress
	if enf == nil {
		return coded.New(coded.PolicyUnsupported, details,
			"egress = %q: the %s driver cannot enforce a network policy outside the guest", e.Mode, ds.Driver)
	}
	if err := enf.EnforceEgress(ctx, ds.VM); err != nil {
		var pe *drivers.PolicyError
		if errors.As(err, &pe) {
			// The driver enforces policies, only not this one: what it says would work comes first.
			details["next_steps"] = append(slices.Clone(pe.NextSteps), steps...)
		}
		return coded.New(coded.PolicyUnsupported, details, "egress = %q: %v", e.Mode, err)
	}
	return nil
}
