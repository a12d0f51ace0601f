package state

import (
	"slices"

	"github.com/sandboxforge/sbf/state/statefile"
)

// Tx is one write of the state: reads see the state as it is now, and
// changes go through its methods, which note what the write touched so
// that only that is recorded.
type Tx struct {
	f         *File
	sandboxes map[string]bool
	tasks     map[string]bool
	snapshots bool
	whole     bool // Update: record everything
}

func newTx(f *File) *Tx { return &Tx{f: f, sandboxes: map[string]bool{}, tasks: map[string]bool{}} }

// State is the state as it is now. Read it freely; change it only
// through Sandbox, Task, PutTask and Snapshots.
func (tx *Tx) State() *File { return tx.f }

// Sandbox is a sandbox's record to change, made (pending) when there is
// none. Setting its phase to Forgotten drops it.
func (tx *Tx) Sandbox(name string) *Sandbox {
	tx.sandboxes[name] = true
	rec, ok := tx.f.Sandboxes[name]
	if !ok {
		rec = &Sandbox{Phase: Pending}
		tx.f.Sandboxes[name] = rec
	}
	return rec
}

// Task is a task's record to change; nil when there is none.
func (tx *Tx) Task(id string) *Task {
	t := tx.f.Tasks[id]
	if t != nil {
		tx.tasks[id] = true
	}
	return t
}

// PutTask records a task, replacing one of the same id.
func (tx *Tx) PutTask(t *Task) {
	if tx.f.Tasks == nil {
		tx.f.Tasks = map[string]*Task{}
	}
	tx.f.Tasks[t.ID] = t
	tx.tasks[t.ID] = true
}

// Snapshots changes the snapshot records (PutSnapshot, DropSnapshotsOf).
func (tx *Tx) Snapshots(change func(*File)) {
	tx.snapshots = true
	change(tx.f)
}

// entry is what the write changed, as a journal line; records asked to be
// forgotten leave the state here.
func (tx *Tx) entry() *statefile.Entry {
	e := &statefile.Entry{}
	if tx.whole {
		return e
	}
	if len(tx.sandboxes) > 0 {
		e.Sandboxes = map[string]*Sandbox{}
	}
	for name := range tx.sandboxes {
		rec := tx.f.Sandboxes[name]
		if rec != nil && rec.Phase == Forgotten {
			delete(tx.f.Sandboxes, name)
			rec = nil
		}
		e.Sandboxes[name] = rec
	}
	if len(tx.tasks) > 0 {
		e.Tasks = map[string]*Task{}
	}
	for id := range tx.tasks {
		e.Tasks[id] = tx.f.Tasks[id]
	}
	if tx.snapshots {
		list := slices.Clone(tx.f.Snapshots)
		if list == nil {
			list = []*Snapshot{}
		}
		e.Snapshots = &list
	}
	return e
}

// Sandbox is a copy of one sandbox's record as the store last saw it.
func (s *Store) Sandbox(name string) (*Sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.file.Sandboxes[name]
	if !ok {
		return nil, false
	}
	return statefile.CloneSandbox(rec), true
}

// TasksOf copies the task records of one sandbox as the store last saw them.
func (s *Store) TasksOf(sandbox string) []*Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Task
	for _, t := range s.file.Tasks {
		if t.Sandbox == sandbox {
			c := *t
			out = append(out, &c)
		}
	}
	return out
}
