package reconcile

import (
	"github.com/sandboxforge/sbf/state"
)

// namedNow says whether the desired state or the state file, read again
// now, names a sandbox.
func (e *Engine) namedNow(u *run) (func(name string) bool, error) {
	rec, err := state.Read(u.dir, u.root, u.id)
	if err != nil {
		return nil, err
	}
	ws := u.ws
	ws.Now = u.now
	r, err := e.Load(ws)
	if err != nil {
		return nil, err
	}
	return func(name string) bool {
		_, declared := r.Config.Sandboxes[name]
		return declared || rec.Sandboxes[name] != nil
	}, nil
}
