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
