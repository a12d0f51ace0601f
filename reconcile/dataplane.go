package reconcile

import (
	"context"
	"path/filepath"

	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Tasks runs and tracks a workspace's background tasks (package sandbox):
// only in sandboxes the engine admits, recorded under the state lock.
func (e *Engine) Tasks(ws spec.Options) *sandbox.Tasks {
	return &sandbox.Tasks{Target: func(name string) (*sandbox.Target, error) { return e.Target(ws, name) },
		Store: taskStore{e: e, ws: ws}, Clock: e.Clock}
}

// taskStore keeps tasks in the workspace's state file.
type taskStore struct {
	e  *Engine
	ws spec.Options
}

func (s taskStore) ReadTasks() (map[string]*state.Task, error) {
	root, id, err := s.ws.Identity()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, spec.Dir)
	f, err := state.Read(dir, root, id)
	if err != nil {
		return nil, err
	}
	if f, err = state.WithEnded(dir, f); err != nil { // a task's saved output outlives its sandbox's record
		return nil, err
	}
	return f.Tasks, nil
}

func (s taskStore) SaveTask(ctx context.Context, t *state.Task) error {
	root, id, err := s.ws.Identity()
	if err != nil {
		return err
	}
	store, err := state.Open(ctx, filepath.Join(root, spec.Dir), root, id, s.e.holder(), s.e.LockTimeout)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.Write(func(tx *state.Tx) {
		saved := *t
		tx.PutTask(&saved)
	})
}

// ComposeUp is docker_compose up (or restart) of the stack the engine
// converges for a sandbox: it converges the sandbox as `sbf apply --target
// NAME --no-renew` does and says what its layers left. A sandbox another
// run holds is waited for, never skipped. The door calls it, never the
// data plane.
func (e *Engine) ComposeUp(ctx context.Context, ws spec.Options, name string) (sandbox.Converged, error) {
	res, err := e.Apply(ctx, ws, Options{Targets: []string{name},
		Intent: Keep{Sandboxes: []string{name}}})
	if err != nil {
		return sandbox.Converged{}, err
	}
	p, err := e.Prepared(res, name)
	if err != nil {
		return sandbox.Converged{}, err
	}
	out := sandbox.Converged{Plan: res.Plan, ConnectionEnv: p.ConnectionEnv}
	if p.Network != nil {
		out.Network = p.Network.Name
	}
	return out, nil
}
