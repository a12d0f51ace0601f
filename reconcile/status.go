package reconcile

import (
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/state"
)

// SandboxStatus is one row of `sbf status`.
type SandboxStatus struct {
	Name      string      `json:"name"`
	Instance  string      `json:"instance"`
	Driver    string      `json:"driver"`
	Phase     state.Phase `json:"phase"`
	Declared  bool        `json:"declared"`
	ExpiresAt *time.Time  `json:"expires_at"`
	// CreatedAt is when its instance was made: as recorded, else as its
	// backend says (a create cut short recorded none).
	CreatedAt *time.Time `json:"created_at,omitempty"`
	// Live is what the backend says: running (usable), booting (running,
	// its guest not ready yet), stopped, broken, absent, unknown.
	Live      string `json:"live_status"`
	Drift     string `json:"drift"` // empty when record and world agree
	LastError string `json:"last_error"`
	// Lease is the engine's verdict on the lease at the moment the row was
	// made, the same for every door: live, expired (it has run out; the
	// loop deletes the VM), ended (destroyed or expired, recorded) or none.
	Lease LeaseVerdict `json:"lease"`
	// Departed is why its instance went without sbf, as its backend saw it
	// (a cluster's controller deleting the VM at its lease end).
	Departed *drivers.Departure `json:"departed,omitempty"`
}

// LeaseVerdict says where a sandbox's lease stands.
type LeaseVerdict string

const (
	LeaseLive    LeaseVerdict = "live"
	LeaseExpired LeaseVerdict = "expired"
	LeaseEnded   LeaseVerdict = "ended"
	LeaseNone    LeaseVerdict = "none"
)

// verdict judges a row's lease at now: a lease that has run out reads
// expired at once, before the loop has deleted anything, so status and
// exec never disagree about it.
func verdict(row SandboxStatus, now time.Time) LeaseVerdict {
	switch {
	case row.Phase.Terminal():
		return LeaseEnded
	case row.ExpiresAt != nil && !now.Before(*row.ExpiresAt):
		return LeaseExpired
	case row.ExpiresAt == nil:
		return LeaseNone
	}
	return LeaseLive
}

// Ended says the sandbox is over: destroyed or expired, with its VM
// gone. `sbf status` lists such rows only with --all.
func (s SandboxStatus) Ended() bool { return s.Phase.Terminal() && s.Drift == "" && s.Live == "absent" }

// Status combines desired, recorded and observed state per sandbox.
func (r *Result) Status() []SandboxStatus {
	var out []SandboxStatus // nil when there are none, as JSON's null
	names := r.SortedSandboxes()
	if len(names) > 0 {
		out = make([]SandboxStatus, 0, len(names))
	}
	for _, name := range names {
		sb, declared := r.Resolved.Config.Sandboxes[name]
		row := SandboxStatus{Name: name, Declared: declared, Phase: state.Pending, Instance: r.InstanceOf(name)}
		if declared {
			row.Driver = r.Resolved.Host.ResolveDriver(sb.Driver)
		}
		if l, ok := r.Resolved.Config.Leases[name]; ok {
			exp := l.ExpiresAt
			row.ExpiresAt = &exp
		}
		rec := r.recorded.Sandboxes[name]
		if rec != nil {
			row.Phase, row.LastError, row.CreatedAt = rec.Phase, rec.LastError, rec.CreatedAt
			if row.Driver == "" {
				row.Driver = rec.Driver
			}
			if row.ExpiresAt == nil {
				row.ExpiresAt = rec.ExpiresAt
			}
		}
		row.Live, row.Drift = r.live(row.Instance, row.Driver, rec)
		if rec != nil && row.Live == "absent" && (rec.Phase == state.Running || rec.Phase == state.Stopped) &&
			row.ExpiresAt != nil && !r.Now.Before(*row.ExpiresAt) {
			// Its lease ended and its instance went: expired where it ran (a cluster's
			// controller deletes a VM at its lease end whether sbf runs or not), as the next
			// apply records it; not drift.
			row.Phase, row.Drift = state.Expired, ""
		}
		if d, ok := r.Observed.Departed[name]; ok && rec != nil && row.Live == "absent" &&
			(rec.Phase == state.Running || rec.Phase == state.Stopped) {
			row.Departed = &d
			if d.Expired {
				// Its backend saw it expire (the cluster's clock, a lease end the
				// controller read on the VM): an expiry, whatever this host's clock says.
				row.Phase, row.Drift = state.Expired, ""
			} else {
				row.Drift = fmt.Sprintf("recorded %s, but the instance is missing: %s", rec.Phase, d)
			}
		}
		if inst, ok := r.Observed.Instances[row.Instance]; ok && row.CreatedAt == nil && !inst.Created.IsZero() {
			created := inst.Created.UTC()
			row.CreatedAt = &created
		}
		row.Lease = verdict(row, r.Now)
		if r.Busy != nil && row.Drift != "" {
			// Mid-apply, record and world disagree by design.
			row.Drift = ""
		}
		out = append(out, row)
	}
	return out
}

func (r *Result) live(instance, driver string, rec *state.Sandbox) (live, drift string) {
	if _, unavailable := r.Observed.Unavailable[driver]; unavailable {
		return "unknown", ""
	}
	inst, exists := r.Observed.Instances[instance]
	switch {
	case !exists:
		live = "absent"
	default:
		live = string(inst.Status)
	}
	if rec == nil {
		if exists {
			drift = "instance exists but is not recorded"
		}
		return live, drift
	}
	switch {
	case (rec.Phase == state.Running || rec.Phase == state.Stopped) && !exists:
		drift = fmt.Sprintf("recorded %s, but the instance is missing", rec.Phase)
	case rec.Phase.Terminal() && exists:
		drift = fmt.Sprintf("recorded %s, but the instance still exists", rec.Phase)
	case rec.Phase == state.Running && exists && inst.Status != drivers.Running:
		drift = "recorded running, but the instance is " + string(inst.Status)
	case exists && inst.Status == drivers.Booting:
		drift = fmt.Sprintf("recorded %s; its VM is still booting (the next apply finishes its start)", rec.Phase)
	}
	return live, drift
}
