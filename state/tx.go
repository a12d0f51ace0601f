package state

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/sandboxforge/sbf/state/statefile"
)

// Tx is one write of the state: reads see the state as it is now, and
// changes go through its methods, which note what the write touched so
// that only that is recorded.
type Tx struct {
	f *File
	// The records the write touched, as they were before it: a record
	// that is the same after is not written, so a write that changes
	// nothing writes nothing.
	sandboxes map[string][]byte
	tasks     map[string][]byte
	snapshots []byte
	whole     bool // Update: record everything
}

func newTx(f *File) *Tx { return &Tx{f: f, sandboxes: map[string][]byte{}, tasks: map[string][]byte{}} }

func encode(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic("state: cannot encode a record: " + err.Error())
	}
	return data
}

// State is the state as it is now. Read it freely; change it only
// through Sandbox, Task, PutTask and Snapshots.
func (tx *Tx) State() *File { return tx.f }

// Sandbox is a sandbox's record to change, made (pending) when there is
// none. Setting its phase to Forgotten drops it.
func (tx *Tx) Sandbox(name string) *Sandbox {
	if _, seen := tx.sandboxes[name]; !seen {
		tx.sandboxes[name] = encode(tx.f.Sandboxes[name])
	}
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
	if _, seen := tx.tasks[id]; !seen && t != nil {
		tx.tasks[id] = encode(t)
	}
	return t
}

// PutTask records a task, replacing one of the same id.
func (tx *Tx) PutTask(t *Task) {
	if _, seen := tx.tasks[t.ID]; !seen {
		tx.tasks[t.ID] = encode(tx.f.Tasks[t.ID])
	}
	if tx.f.Tasks == nil {
		tx.f.Tasks = map[string]*Task{}
	}
	tx.f.Tasks[t.ID] = t
}

// Snapshots changes the snapshot records (PutSnapshot, DropSnapshotsOf).
func (tx *Tx) Snapshots(change func(*File)) {
	if tx.snapshots == nil {
		tx.snapshots = encode(tx.f.Snapshots)
	}
	change(tx.f)
}

// change is what the write changed, as a journal line (nil: nothing
// did); records asked to be forgotten leave the state here.
func (tx *Tx) change() *statefile.StateLine {
	l := &statefile.StateLine{}
	if tx.whole {
		return l
	}
	note := func(key string, before, after []byte) {
		switch {
		case bytes.Equal(before, after):
		case string(after) == "null":
			l.Delete = append(l.Delete, key)
		case l.Put == nil:
			l.Put = map[string]json.RawMessage{key: after}
		default:
			l.Put[key] = after
		}
	}
	for name, before := range tx.sandboxes {
		if rec := tx.f.Sandboxes[name]; rec != nil && rec.Phase == Forgotten {
			delete(tx.f.Sandboxes, name)
		}
		note(statefile.SandboxKey(name), before, encode(tx.f.Sandboxes[name]))
	}
	for id, before := range tx.tasks {
		note(statefile.TaskKey(id), before, encode(tx.f.Tasks[id]))
	}
	if tx.snapshots != nil {
		note(statefile.SnapshotsKey, tx.snapshots, encode(tx.f.Snapshots))
	}
	if len(l.Put) == 0 && len(l.Delete) == 0 {
		return nil
	}
	slices.Sort(l.Delete)
	return l
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
