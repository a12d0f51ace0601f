package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/flock"
)

// File names inside a workspace's .sandboxforge folder.
const (
	FileName   = "state.json"
	BackupName = "state.json.backup"
	LockName   = "state.lock"
)

// CorruptError is a state file that cannot be read. sbf never replaces
// such a file on its own.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is unreadable (%v); it was left untouched: restore it from %s, "+
		"or move it aside and sbf rebuilds the state from what the drivers list", e.Path, e.Err, BackupName)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// EnsureDir creates the workspace's .sandboxforge folder with a
// .gitignore of "*" so nothing sbf writes is ever committed.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(gi, []byte("*\n"), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", gi, err)
		}
	}
	return nil
}

// Read loads the state without locking (plan, status). A missing file is
// an empty state with a new lineage.
func Read(dir, root, workspaceID string) (*File, error) {
	f, _, err := read(dir, root, workspaceID)
	return f, err
}

func read(dir, root, workspaceID string) (*File, []byte, error) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(root, workspaceID), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading state %s: %w", path, err)
	}
	f, err := decode(data)
	if err != nil {
		return nil, nil, &CorruptError{Path: path, Err: err}
	}
	return f, data, nil
}

// Store is a locked, writable state file.
type Store struct {
	dir  string
	lock *flock.Lock
	mu   sync.Mutex
	file *File
	disk []byte // what state.json holds now; becomes the backup on the next write
}

// Open locks the workspace's state (waiting up to timeout) and reads it.
func Open(ctx context.Context, dir, root, workspaceID string, who flock.Holder, timeout time.Duration) (*Store, error) {
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	lock, err := flock.Acquire(ctx, filepath.Join(dir, LockName), who, timeout)
	if err != nil {
		var le *flock.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w; wait for it to finish or pass --lock-timeout (for example --lock-timeout 5m)", err)
		}
		return nil, err
	}
	f, disk, err := read(dir, root, workspaceID)
	if err != nil {
		lock.Release()
		return nil, err
	}
	return &Store{dir: dir, lock: lock, file: f, disk: disk}, nil
}

// Snapshot returns a deep copy of the current state.
func (s *Store) Snapshot() *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file.Clone()
}

// Update changes the state and writes it: the previous version becomes
// the backup, then the new one replaces state.json atomically. Updates
// are serialised, so concurrent actions never lose each other's writes.
func (s *Store) Update(change func(*File)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.file.Clone()
	change(next)
	next.dropForgotten()
	next.Serial = s.file.Serial + 1
	if next.Lineage == "" {
		next.Lineage = newLineage()
	}
	data, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	data = append(data, '\n')
	if s.disk != nil {
		if err := atomicfile.WriteFile(filepath.Join(s.dir, BackupName), s.disk, 0o644); err != nil {
			return fmt.Errorf("writing state backup: %w", err)
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(s.dir, FileName), data, 0o644); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	s.file, s.disk = next, data
	return nil
}

// Close releases the lock.
func (s *Store) Close() error { return s.lock.Release() }

// Clone deep-copies the state.
func (f *File) Clone() *File {
	data, err := json.Marshal(f)
	if err != nil {
		panic("state: cannot encode itself: " + err.Error())
	}
	var out File
	if err := json.Unmarshal(data, &out); err != nil {
		panic("state: cannot decode itself: " + err.Error())
	}
	if out.Sandboxes == nil {
		out.Sandboxes = map[string]*Sandbox{}
	}
	return &out
}

// ReadConsistent reads the state for a plan, which never writes: when a
// writer (an apply) holds the lock, it waits up to timeout for it, and
// otherwise reads what is there and names the writer in busy, because the
// world may be halfway between two records. release ends the read; the
// caller holds it while it observes the world, so that what it sees and
// what was recorded belong together.
func ReadConsistent(ctx context.Context, dir, root, workspaceID string, who flock.Holder, timeout time.Duration) (f *File, busy *flock.Holder, release func(), err error) {
	release = func() {}
	lockPath := filepath.Join(dir, LockName)
	if _, statErr := os.Stat(lockPath); statErr == nil {
		lock, lerr := flock.Acquire(ctx, lockPath, who, timeout)
		var le *flock.LockedError
		switch {
		case lerr == nil:
			release = func() { lock.Release() }
		case errors.As(lerr, &le):
			busy = le.Holder
			if busy == nil {
				busy = &flock.Holder{Command: "another sbf process"}
			}
		}
	}
	f, err = Read(dir, root, workspaceID)
	if err != nil {
		release()
		return nil, nil, func() {}, err
	}
	return f, busy, release, nil
}
