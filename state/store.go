package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/state/statefile"
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

// Coded is STATE_FILE_INVALID naming the file.
func (e *CorruptError) Coded() *coded.Error {
	return coded.New(coded.StateFileInvalid, map[string]any{"path": e.Path}, "%s", e.Error())
}

// MaxFileBytes bounds state.json and its journal: far above what any
// workspace's records take (a task keeps at most 16 KiB of output), far
// below what would exhaust a host. A larger file is STATE_FILE_INVALID,
// never read, and sbf never writes one.
const MaxFileBytes = 64 << 20

// Folder is a workspace's .sandboxforge folder (dir) as sbf's own: the
// workspace root above it as named, dir and everything sbf keeps in it
// never a link (package ownfile).
func Folder(dir string) ownfile.Folder { return ownfile.In(filepath.Dir(dir), filepath.Base(dir)) }

// EnsureDir creates the workspace's .sandboxforge folder with a
// .gitignore of "*" so nothing sbf writes is ever committed.
func EnsureDir(dir string) error {
	own := Folder(dir)
	if err := own.Make(); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	_, err := own.Stat(".gitignore")
	if errors.Is(err, fs.ErrNotExist) {
		if err = own.WriteNew(".gitignore", []byte("*\n"), 0o644); errors.Is(err, fs.ErrExist) {
			err = nil // another process wrote it meanwhile
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, ".gitignore"), err)
	}
	return nil
}

// Read loads the state without locking (plan, status): state.json and
// the journal of writes since. A missing file is an empty state with a new
// lineage.
func Read(dir, root, workspaceID string) (*File, error) {
	l, err := Look(dir, root, workspaceID)
	if err != nil {
		return nil, err
	}
	return l.File, nil
}

// Looked is the state as one unlocked read found it (File), with the files
// it came from, so that the request's Open under the lock reads only what
// changed since (OpenAfter).
type Looked struct {
	File                   *File
	dir, root, workspaceID string
	seen                   view
	whole                  []byte
}

// Look reads the state without locking, as Read does, keeping what OpenAfter needs.
func Look(dir, root, workspaceID string) (*Looked, error) {
	f, v, whole, err := read(dir, root, workspaceID)
	if err != nil {
		return nil, err
	}
	return &Looked{File: f, dir: dir, root: root, workspaceID: workspaceID, seen: v, whole: whole}, nil
}

// Store is a workspace's writable state. Its lock guards edits of the
// files, never a driver call: each write takes the lock, reads what other
// processes wrote since this store last looked (only the journal's new
// lines, unless state.json was rewritten), applies the change, appends it
// to the journal, then lets go. When the journal has grown as large as the
// state itself, a write rewrites state.json whole and starts a new
// journal, so writes cost what they change, amortised.
type Store struct {
	dir, root, workspaceID string
	own                    ownfile.Folder // dir
	who                    flock.Holder
	wait                   time.Duration
	mu                     sync.Mutex
	file                   *File // as this store last read or wrote it; writes change it in place
	seen                   view  // the files it came from (stale: read everything again)
	// before is the state as Open found it (nil: there was none), byte
	// for byte when state.json held all of it. The run's first write makes
	// it the backup, so the backup is always the version a run started from.
	before   []byte
	backedUp bool
	wrote    bool // since Close last folded the journal in
	// undeclared says which sandboxes no file declares: Archive.
	undeclared func(name string) bool
	// life is the opener's context without its cancellation: a write
	// records what a run did even after the run was interrupted.
	life context.Context
	// writes counts the lines appended, synced those made durable (Sync,
	// or a whole write); syncMu lets one Sync at a time fsync for all.
	writes, synced int64
	syncMu         sync.Mutex
}

// minLockWait is the least a writer waits for the state lock: it is held
// only while a file is read and written, so a longer wait means a stuck
// process, never a busy one.
var minLockWait = 30 * time.Second

// Open reads the workspace's state under its lock, waiting up to timeout
// (at least 30 seconds) for it.
func Open(ctx context.Context, dir, root, workspaceID string, who flock.Holder, timeout time.Duration) (*Store, error) {
	l := &Looked{dir: dir, root: root, workspaceID: workspaceID, seen: view{stale: true}} // nothing seen yet
	return OpenAfter(ctx, l, who, timeout)
}

// Again is the state now: l when neither state.json nor the journal
// changed since l looked, else a new look.
func (l *Looked) Again() (*Looked, error) {
	own := Folder(l.dir)
	snap, err := own.Stat(FileName)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	journal, err := own.Stat(JournalName)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading state journal: %w", err)
	}
	if !l.seen.stale && same(snap, l.seen.snap) && same(journal, l.seen.journal.seen) {
		return l, nil
	}
	return Look(l.dir, l.root, l.workspaceID)
}

// OpenAfter is Open for a request that looked at the state already: under
// the lock it reads only what other writers changed since the look (the
// journal's new lines; everything when state.json was rewritten).
func OpenAfter(ctx context.Context, l *Looked, who flock.Holder, timeout time.Duration) (*Store, error) {
	if err := EnsureDir(l.dir); err != nil {
		return nil, err
	}
	s := &Store{dir: l.dir, root: l.root, workspaceID: l.workspaceID, own: Folder(l.dir), who: who,
		wait: max(timeout, minLockWait), life: context.WithoutCancel(ctx)}
	lock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if l.File != nil {
		s.file = l.File.Clone() // the look's stays as it was
	}
	s.seen = l.seen
	reread, whole, err := s.refresh()
	if err != nil {
		return nil, err
	}
	if !reread {
		whole = l.whole
	}
	return s, s.keepBefore(whole)
}

// keepBefore keeps the state as the run found it, the backup its first
// write makes: state.json's bytes (whole) when they held all of it.
func (s *Store) keepBefore(whole []byte) error {
	s.before = whole
	if whole != nil && s.seen.journal.lines > 0 {
		var buf bytes.Buffer
		if err := statefile.Write(&buf, s.file); err != nil {
			return err
		}
		s.before = buf.Bytes()
	}
	return nil
}

func (s *Store) lock(ctx context.Context) (*flock.Lock, error) {
	lock, err := flock.Acquire(ctx, s.own.File(LockName), s.who, s.wait)
	var le *flock.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w; the state lock is held only while the file is written, so that process "+
			"is likely stuck: end it, or wait longer with --lock-timeout", err)
	}
	return lock, err
}

// Snapshot returns a deep copy of the state as this store last saw it.
func (s *Store) Snapshot() *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file.Clone()
}

// SnapshotAfter is Snapshot for a run that looked at the state first (l):
// the look's own File when the store holds the same version of the state
// (its lineage and serial: every write moves the serial), rather than one
// more copy. Neither is changed by the store's writes.
func (s *Store) SnapshotAfter(l *Looked) *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := l.File; f != nil && s.file != nil && f.Lineage == s.file.Lineage && f.Serial == s.file.Serial {
		return f
	}
	return s.file.Clone()
}

// Reload reads, under the lock, what other writers changed since the
// store last looked (only the journal's new lines, unless state.json was
// rewritten) and says whether they changed anything: a run that planned
// before it took the locks of the sandboxes it acts on plans again from
// the state as it is under them, if it changed.
func (s *Store) Reload(ctx context.Context) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer lock.Release()
	before := s.seen.journal.off
	reread, _, err := s.refresh()
	if err != nil {
		return false, fmt.Errorf("reading the state again: %w", err)
	}
	return reread || s.seen.journal.off != before, nil
}

// Update changes the state as a whole and writes it whole: for changes
// that touch most records. Write is the per-record form.
func (s *Store) Update(change func(*File)) error {
	return s.write(func(tx *Tx) {
		tx.whole = true
		change(tx.f)
	})
}

// Write changes records of the state through tx and records the change:
// under the lock, it applies to the state as it is now; on the run's first
// write the version the run started from becomes the backup. Writes are
// serialised, so concurrent actions (of this process or others) never
// lose each other's changes.
func (s *Store) Write(change func(*Tx)) error { return s.write(change) }

func (s *Store) write(change func(*Tx)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := s.lock(s.life)
	if err != nil {
		return err
	}
	defer lock.Release()
	if _, _, err := s.refresh(); err != nil {
		return err
	}
	if err := s.backUp(); err != nil {
		return err
	}
	tx := newTx(s.file)
	change(tx)
	if err := s.commit(tx); err != nil {
		s.seen.stale = true // the state in memory may hold the change the files do not
		return err
	}
	s.wrote = true
	return nil
}

// backUp writes the backup once per Store: the state as the run found it.
// holdsEnded says whether the state holds a record the archive should.
func (s *Store) holdsEnded() bool {
	for name, sb := range s.file.Sandboxes {
		if s.archived(name, sb) {
			return true
		}
	}
	return false
}

func (s *Store) backUp() error {
	if s.backedUp || s.before == nil {
		return nil
	}
	if err := s.own.WriteFile(BackupName, s.before, 0o644); err != nil {
		return fmt.Errorf("writing state backup: %w", err)
	}
	s.backedUp = true
	return nil
}

// Close ends the store's run: the journal's lines are folded into
// state.json, so between runs state.json alone holds the whole state (the
// documented file, for people and tools that read it). A run that wrote
// nothing writes nothing here either.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.wrote {
		return nil
	}
	lock, err := s.lock(s.life)
	if err != nil {
		return err
	}
	defer lock.Release()
	if _, _, err := s.refresh(); err != nil {
		return err
	}
	s.wrote = false
	if s.seen.journal.lines == 0 && !s.seen.stale && !s.holdsEnded() {
		return nil
	}
	return s.writeWhole(true)
}
