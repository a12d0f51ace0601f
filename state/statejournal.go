package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/state/statefile"
)

// JournalName is the file of writes made since state.json was written whole.
const JournalName = "state.journal"

// view is which files a store's state was read from, so that a writer
// reads only what others appended since.
type view struct {
	snap    fs.FileInfo // state.json (nil: it did not exist)
	journal journal     // state.journal, as far as it was applied
	stale   bool        // read everything again before the next write
}

// same reports whether two looks found the same file unchanged: renamed
// into place files have a new identity; size and time catch a reused one.
func same(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// read loads state.json and the journal that continues it. whole is
// state.json's bytes (nil: there was none). A journal that does not
// continue state.json is read as empty, after a second look in case a
// writer was between rewriting one and the other.
func read(dir, root, workspaceID string) (f *File, v view, whole []byte, err error) {
	readcount.Add(readcount.State)
	for attempt := 0; ; attempt++ {
		f, v, whole, err = readOnce(dir, root, workspaceID)
		if !errors.Is(err, statefile.ErrStaleJournal) {
			return f, v, whole, err
		}
		if attempt == 2 {
			v.stale = true // a journal of another state.json: the next write starts a new one
			return f, v, whole, nil
		}
	}
}

func readOnce(dir, root, workspaceID string) (*File, view, []byte, error) {
	own := Folder(dir)
	path := filepath.Join(dir, FileName)
	data, info, err := own.ReadFile(FileName, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		data, info, err = nil, nil, nil // a missing one (or a missing folder): nothing written yet
	}
	if err != nil {
		return nil, view{}, nil, fmt.Errorf("reading state %s: %w", path, err)
	}
	f := New(root, workspaceID)
	if data != nil {
		if f, err = statefile.Parse(data); err != nil {
			return nil, view{}, nil, &CorruptError{Path: path, Err: err}
		}
	}
	v := view{snap: info, journal: journal{file: own.File(JournalName)}}
	lines, _, err := v.journal.read(MaxFileBytes)
	if err != nil {
		return nil, v, nil, fmt.Errorf("reading state journal %s: %w", v.journal.file.Path(), err)
	}
	err = statefile.ReadJournal(lines, f)
	if errors.Is(err, statefile.ErrStaleJournal) {
		return f, v, data, err
	}
	if err != nil {
		return nil, v, nil, &CorruptError{Path: v.journal.file.Path(), Err: err}
	}
	return f, v, data, nil
}

// refresh brings the store's state up to the files, under the lock: the
// journal's new lines when nothing else changed, everything otherwise
// (reread; whole is then state.json's bytes, nil when there was none).
func (s *Store) refresh() (reread bool, whole []byte, err error) {
	if !s.seen.stale {
		snap, err := s.own.Stat(FileName)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, nil, fmt.Errorf("reading state: %w", err)
		}
		if same(snap, s.seen.snap) {
			if ok, err := s.readNewLines(); ok || err != nil {
				return false, nil, err
			}
		}
	}
	f, v, whole, err := read(s.dir, s.root, s.workspaceID)
	if err != nil {
		return false, nil, err
	}
	s.file, s.seen = f, v
	return true, whole, nil
}

// readNewLines applies what other writers appended to the journal since
// this store last looked; false means the journal is not the one it read.
func (s *Store) readNewLines() (bool, error) {
	j := s.seen.journal
	lines, fresh, err := j.read(MaxFileBytes)
	if err != nil || fresh {
		return false, err
	}
	if j.reads != s.seen.journal.reads {
		readcount.Add(readcount.State) // the lines others appended
	}
	if err := statefile.ReadChanges(lines, s.file); err != nil {
		return false, &CorruptError{Path: j.file.Path(), Err: err}
	}
	s.seen.journal = j
	return true, nil
}

// commit records tx's change: one journal line, or state.json written
// whole (with a new journal) when the change is whole, the journal is due
// for compaction, or there is no journal of this build continuing
// state.json yet.
func (s *Store) commit(tx *Tx) error {
	f := s.file
	line := tx.change()
	if line == nil {
		return nil // nothing changed: nothing to write
	}
	if f.Lineage == "" {
		f.Lineage = newLineage()
	}
	f.Serial, f.WrittenBy = f.Serial+1, SbfVersion
	line.Meta = statefile.StateMark{Serial: f.Serial, WrittenBy: f.WrittenBy}
	data, err := statefile.EncodeLine(line)
	if err != nil {
		return err
	}
	if tx.whole || s.seen.stale || s.seen.journal.head == 0 || s.seen.journal.due(len(data), sizeOf(s.seen.snap)) {
		return s.writeWhole(false)
	}
	if err := s.seen.journal.append(data, false); err != nil {
		return fmt.Errorf("writing state journal: %w", err)
	}
	s.writes++
	return nil
}

// Sync makes the store's writes so far durable: a write appends its line
// without syncing it, and Sync syncs the journal once for every write made
// since the last Sync, whichever goroutine made them (a group commit: the
// executor syncs at the end of each step, so the creates of a parallel
// run share their fsyncs). A crash loses no write (the lines are in the
// file); a power cut loses at most the writes of the steps in flight,
// whose VMs the next run finds by their names. A whole write is synced
// as it is made.
func (s *Store) Sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	target, done, file := s.writes, s.synced, s.seen.journal.file
	s.mu.Unlock()
	if done >= target {
		return nil // a Sync since the last write covered it
	}
	fh, err := file.OpenFile(os.O_WRONLY, 0)
	if err == nil {
		err = syncFile(fh)
		fh.Close()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // gone: rewritten whole (and synced) meanwhile
		return fmt.Errorf("syncing the state journal: %w", err)
	}
	s.mu.Lock()
	s.synced = max(s.synced, target)
	s.mu.Unlock()
	return nil
}

func sizeOf(info fs.FileInfo) int64 {
	if info == nil {
		return 0
	}
	return info.Size()
}

// writeWhole writes state.json, then a journal that continues it: a crash
// between the two leaves a journal that no longer matches, read as empty.
// At the end of a run (archive) the records of ended sandboxes move to the
// archive first: mid-run, a later write of the run may still name them.
func (s *Store) writeWhole(archive bool) error {
	dropForgotten(s.file)
	if archive {
		if err := s.archiveEnded(); err != nil {
			return err
		}
	}
	var data bytes.Buffer
	if err := statefile.Write(&data, s.file); err != nil {
		return err
	}
	if data.Len() > MaxFileBytes {
		return coded.New(coded.StateFileInvalid, map[string]any{"path": filepath.Join(s.dir, FileName)},
			"writing state: it would be %d bytes, more than sbf reads back (%d)", data.Len(), MaxFileBytes)
	}
	if err := s.own.WriteFile(FileName, data.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	head, err := statefile.EncodeLine(statefile.JournalHead(s.file))
	if err != nil {
		return err
	}
	j := journal{file: s.own.File(JournalName)}
	if err := j.replace(head); err != nil {
		return fmt.Errorf("writing state journal: %w", err)
	}
	snap, err := s.own.Stat(FileName)
	if err != nil {
		return err
	}
	s.seen, s.synced = view{snap: snap, journal: j}, s.writes
	return nil
}
