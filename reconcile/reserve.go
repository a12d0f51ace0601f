package reconcile

import (
	"context"
	"sync"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"
)

// reserved are the slots a run reserved under the host's instance cap
// before it waited for any lock (admission.Host.Reserve), and the
// instances its creates were admitted for since.
type reserved struct {
	host      *admission.Host
	instances []string // reservations the ledger holds because of this run
	mu        sync.Mutex
	admitted  map[string]bool
}

// reserveAtCap reserves, before the run waits for any lock another run
// holds, a slot for each sandbox an Up would create, so that a create past
// the cap fails at once however many creates are in flight, and creates
// in flight count before any of them has a VM. Those with a live record
// are left to the plan, which knows whether their VM is still there. In a
// workspace with pools a sandbox may adopt a spare, which takes no slot:
// there the ledger is only looked at (admission.Host.Refused).
func (e *Engine) reserveAtCap(ctx context.Context, u *run) error {
	up, ok := u.opts.Intent.(Up)
	if !ok || e.HostDir == "" {
		return nil
	}
	host, _ := e.admission(u.r, plan.DesiredFrom(u.r), u.rec).(*admission.Host)
	if host == nil {
		return nil
	}
	u.reserved.host = host
	for _, name := range up.Sandboxes {
		if rec := u.rec.Sandboxes[name]; rec != nil && !rec.Phase.Terminal() {
			continue
		}
		instance := drivers.InstanceName(u.id, name)
		if len(u.r.Config.Pools) > 0 {
			if err := host.Refused(instance); err != nil {
				return err
			}
			continue
		}
		added, err := host.Reserve(ctx, instance)
		if added {
			u.reserved.instances = append(u.reserved.instances, instance)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// unreserve takes back the reservations of instances the run did not go
// on to create (refused, failed before, declined, or a spare adopted
// instead): their places are free at once. One it created stays in the
// ledger as every admitted instance does.
func (e *Engine) unreserve(ctx context.Context, u *run) {
	r := &u.reserved
	for _, instance := range r.instances {
		r.mu.Lock()
		admitted := r.admitted[instance]
		r.mu.Unlock()
		if !admitted {
			// Best effort: a full count at the cap finds it absent anyway.
			r.host.Gone(context.WithoutCancel(ctx), instance)
		}
	}
}

// noting has admit note the instances its creates were admitted for.
func (r *reserved) noting(admit executor.Admitter) executor.Admitter {
	if admit == nil || len(r.instances) == 0 {
		return admit
	}
	return notingAdmitter{Admitter: admit, r: r}
}

type notingAdmitter struct {
	executor.Admitter
	r *reserved
}

func (n notingAdmitter) Admit(ctx context.Context, instance string) (func(), error) {
	n.r.mu.Lock()
	if n.r.admitted == nil {
		n.r.admitted = map[string]bool{}
	}
	n.r.admitted[instance] = true
	n.r.mu.Unlock()
	return n.Admitter.Admit(ctx, instance)
}

// Gone is the host's: a destroy frees its place at once.
func (n notingAdmitter) Gone(ctx context.Context, instance string) error {
	if g, ok := n.Admitter.(interface {
		Gone(context.Context, string) error
	}); ok {
		return g.Gone(ctx, instance)
	}
	return nil
}
