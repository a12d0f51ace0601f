package plan

import (
	"time"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// LeaseRenewal is a lease end the state file does not hold yet: a lease
// acquired, renewed (every apply and up renews what it keeps), extended
// or pulled back. It changes no VM; carrying it out records the new end,
// so the plan after it is empty again.
type LeaseRenewal struct {
	Sandbox string `json:"sandbox"`
	// Old is the end recorded before (nil: none recorded).
	Old *time.Time `json:"old_expires_at"`
	New time.Time  `json:"new_expires_at"`
	// Acquired says there was no live lease before: none recorded, one
	// that ended, or a sandbox destroyed or expired since.
	Acquired bool `json:"acquired"`
}

// planLease notes a live lease whose end the record does not hold.
func planLease(p *Plan, name string, l *spec.LeaseRecord, r *state.Sandbox, now time.Time) {
	end := l.ExpiresAt.UTC()
	if r != nil && r.ExpiresAt != nil && r.ExpiresAt.Equal(end) && !r.Phase.Terminal() {
		return
	}
	lr := LeaseRenewal{Sandbox: name, New: end, Acquired: true}
	if r != nil && r.ExpiresAt != nil {
		old := r.ExpiresAt.UTC()
		lr.Old = &old
		lr.Acquired = r.Phase.Terminal() || !now.Before(old)
	}
	p.Leases = append(p.Leases, lr)
}

// Renewal says whether a lease end moves a live lease later on a sandbox
// whose record holds the lease's end (not one acquired).
func (l LeaseRenewal) Renewal() bool { return !l.Acquired && l.Old != nil }

// RenewalsAlone are the sandboxes whose only step in the plan is a
// renewal: no action, no record corrected. A run records those lease ends
// without taking the sandboxes' locks, each only while its record still
// holds the end the plan renewed (AsPlanned, under the state's lock): a
// renewal changes no VM, so a run that changed the sandbox meanwhile
// changed its record, and its own plan stands.
func (p *Plan) RenewalsAlone() map[string]bool {
	var out map[string]bool
	for _, l := range p.Leases {
		if l.Renewal() {
			if out == nil {
				out = map[string]bool{}
			}
			out[l.Sandbox] = true
		}
	}
	if out == nil {
		return nil
	}
	for _, a := range p.Actions {
		delete(out, a.Sandbox)
	}
	for _, r := range p.Refresh {
		delete(out, r.Sandbox)
	}
	return out
}

// AsPlanned says whether a sandbox's record still holds what a renewal
// was planned from: the sandbox not ended, and the old end recorded.
func (l LeaseRenewal) AsPlanned(r *state.Sandbox) bool {
	return r != nil && !r.Phase.Terminal() && l.Old != nil && r.ExpiresAt != nil && r.ExpiresAt.Equal(*l.Old)
}
