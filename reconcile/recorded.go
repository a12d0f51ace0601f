package reconcile

import (
	"time"

	"github.com/sandboxforge/sbf/state"
)

// Recorded is what a run left in the state file for one sandbox, as the
// doors see it: a copy of the fields they answer with, never the file,
// so what a door says cannot drift from what the engine decided.
type Recorded struct {
	Phase     state.Phase
	Instance  string
	CreatedAt *time.Time // when its VM was made; nil while none was
	// DockerCommand is how the host reaches the guest's Docker, once the
	// runtime step made it ready; empty before.
	DockerCommand string
}

// Recorded reports a sandbox's record after the run (before it, for a
// plan); false when the state file holds none.
func (r *Result) Recorded(name string) (Recorded, bool) {
	if r == nil || r.recorded == nil {
		return Recorded{}, false
	}
	rec := r.recorded.Sandboxes[name]
	if rec == nil {
		return Recorded{}, false
	}
	out := Recorded{Phase: rec.Phase, Instance: rec.Instance, DockerCommand: rec.Applied["docker_command"]}
	if rec.CreatedAt != nil {
		at := *rec.CreatedAt
		out.CreatedAt = &at
	}
	return out, true
}
