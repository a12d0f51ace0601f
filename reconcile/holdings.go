package reconcile

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Holding is one instance on a backend a team shares and who holds it, as the backend records
// it for every teammate alike: `sbf status --all-owners`.
type Holding struct {
	Holder   string         `json:"holder"`
	Instance string         `json:"instance"`
	Driver   string         `json:"driver"`
	Status   drivers.Status `json:"status"`
	// Sandbox is the sandbox it is, as its label or name says; Mine marks this workspace's.
	Sandbox string `json:"sandbox,omitempty"`
	Mine    bool   `json:"this_workspace"`
	// Spare marks a pool's ready spare nobody has adopted, Idle one past its max_idle (the next
	// run of its pool's workspace replaces it), Template a memory template (never adopted).
	Spare    bool `json:"spare,omitempty"`
	Idle     bool `json:"idle,omitempty"`
	Template bool `json:"memory_template,omitempty"`
	// LeaseEnd is when the backend deletes it (a cluster's controller); nil when it says not.
	LeaseEnd *time.Time `json:"lease_expires_at,omitempty"`
}

// Holdings are the instances the workspace's shared backends listed, whoever holds them, by
// holder then instance.
func (r *Result) Holdings() []Holding {
	tag := drivers.WorkspaceTag(r.Resolved.WorkspaceID)
	out := make([]Holding, 0, len(r.Observed.Holdings))
	for _, inst := range r.Observed.Holdings {
		h := Holding{Holder: inst.Holder, Instance: inst.Name, Driver: inst.Driver, Status: inst.Status}
		if t, sandbox, ok := drivers.ParseInstanceName(inst.Name); ok {
			h.Sandbox, h.Mine = sandbox, t == tag
		}
		if l := inst.Label; l != nil && l.Owner != nil && !l.Owner.Retired {
			h.Sandbox, h.Mine = l.Owner.Sandbox, l.Owner.WorkspaceID == r.Resolved.WorkspaceID
		}
		if l := inst.Label; l != nil && l.Spare != nil && l.Owner == nil {
			h.Template, h.Spare = l.Spare.Memory, !l.Spare.Memory
			h.Idle = h.Spare && !l.Spare.IdleUntil.IsZero() && !r.Now.Before(l.Spare.IdleUntil)
		}
		if !inst.LeaseEnd.IsZero() {
			end := inst.LeaseEnd
			h.LeaseEnd = &end
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b Holding) int {
		return cmp.Or(cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.Instance, b.Instance))
	})
	return out
}
