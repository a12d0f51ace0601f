package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/state/statefile"
)

// JournalName is the file of writes made since state.json was written whole.
const JournalName = "state.journal"

// compactAt is the least journal size that makes a write rewrite
// state.json whole; past it, the journal may grow as large as state.json.
var compactAt int64 = 1 << 20

// view is which files a store's state was read from, so that a writer
// reads only what others appended since.
type view struct {
	snap, journal fs.FileInfo // nil: the file did not exist
	offset        int64       // journal bytes applied
	entries       int         // journal lines applied after the head
	torn          bool        // the journal ends in a line a writer never finished
	stale         bool        // read everything again before the next write
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
	var v view
	own := Folder(dir)
	path := filepath.Join(dir, FileName)
	data, info, err := readFile(own, FileName)
	if err != nil {
		return nil, v, nil, fmt.Errorf("reading state %s: %w", path, err)
	}
	f := New(root, workspaceID)
	if data != nil {
		if f, err = statefile.Read(bytes.NewReader(data)); err != nil {
			return nil, v, nil, &CorruptError{Path: path, Err: err}
		}
	}
	v.snap = info
	jpath := filepath.Join(dir, JournalName)
	jdata, jinfo, err := readFile(own, JournalName)
	if err != nil {
		return nil, v, nil, fmt.Errorf("reading state journal %s: %w", jpath, err)
	}
	v.journal = jinfo
	if jdata == nil {
		return f, v, data, nil
	}
	before := f.Serial
	n, err := statefile.ReadJournal(jdata, f)
	if errors.Is(err, statefile.ErrStaleJournal) {
		return f, v, data, err
	}
	if err != nil {
		return nil, v, nil, &CorruptError{Path: jpath, Err: err}
	}
	v.offset, v.entries, v.torn = int64(n), int(f.Serial-before), n < len(jdata)
	return f, v, data, nil
}

// readFile reads one of the state's files (sbf's own: no link, a regular
// file, at most MaxFileBytes) and what it was when read; a missing one
// (or a missing folder) is nil.
func readFile(own ownfile.Folder, name string) ([]byte, fs.FileInfo, error) {
	data, info, err := own.ReadFile(name, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	return data, info, err
}

// refresh brings the store's state up to the files, under the lock: the
// journal's new lines when nothing else changed, everything otherwise.
func (s *Store) refresh() error {
	if !s.seen.stale {
		snap, err := s.own.Stat(FileName)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading state: %w", err)
		}
		if same(snap, s.seen.snap) {
			ok, err := s.readNewLines()
			if ok || err != nil {
				return err
			}
		}
	}
	f, v, _, err := read(s.dir, s.root, s.workspaceID)
	if err != nil {
		return err
	}
	s.file, s.seen = f, v
	return nil
}

// readNewLines applies what other writers appended to the journal since
// this store last looked; false means the journal is not the one it read.
func (s *Store) readNewLines() (bool, error) {
	fh, err := s.own.OpenFile(JournalName, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return s.seen.journal == nil, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading state journal: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil || s.seen.journal == nil || !os.SameFile(info, s.seen.journal) || info.Size() < s.seen.offset {
		return false, err
	}
	if info.Size() > MaxFileBytes {
		return false, &ownfile.Error{Path: fh.Name(), Problem: fmt.Sprintf("%d bytes", info.Size()),
			Limit: MaxFileBytes}
	}
	if info.Size() > s.seen.offset {
		readcount.Add(readcount.State) // the lines others appended
		tail := make([]byte, info.Size()-s.seen.offset)
		if _, err := fh.ReadAt(tail, s.seen.offset); err != nil {
			return false, fmt.Errorf("reading state journal: %w", err)
		}
		before := s.file.Serial
		n, err := statefile.ReadEntries(tail, s.file)
		if err != nil {
			return false, &CorruptError{Path: fh.Name(), Err: err}
		}
		s.seen.offset += int64(n)
		s.seen.entries += int(s.file.Serial - before)
		s.seen.torn = n < len(tail)
	}
	s.seen.journal = info
	return true, nil
}

// commit records tx's change: one journal line, or state.json written
// whole (with a new journal) when the change is whole, the journal is due
// for compaction, or there is no journal continuing state.json yet.
func (s *Store) commit(tx *Tx) error {
	f := s.file
	entry := tx.entry()
	if entry == nil {
		return nil // nothing changed: nothing to write
	}
	if f.Lineage == "" {
		f.Lineage = newLineage()
	}
	entry.Serial, entry.Lineage, entry.WrittenBy = f.Serial+1, f.Lineage, SbfVersion
	f.Serial, f.WrittenBy = entry.Serial, entry.WrittenBy
	var line bytes.Buffer
	if err := statefile.AppendLine(&line, entry); err != nil {
		return err
	}
	due := s.seen.offset+int64(line.Len()) > max(compactAt, sizeOf(s.seen.snap))
	if tx.whole || due || s.seen.journal == nil || s.seen.stale {
		return s.writeWhole()
	}
	return s.appendLine(line.Bytes())
}

func sizeOf(info fs.FileInfo) int64 {
	if info == nil {
		return 0
	}
	return info.Size()
}

// writeWhole writes state.json, then a journal that continues it: a crash
// between the two leaves a journal that no longer matches, read as empty.
func (s *Store) writeWhole() error {
	dropForgotten(s.file)
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
	var head bytes.Buffer
	statefile.AppendLine(&head, statefile.JournalHead{Version: statefile.JournalVersion, Lineage: s.file.Lineage,
		Serial: s.file.Serial})
	if err := s.own.WriteFile(JournalName, head.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing state journal: %w", err)
	}
	snap, err := s.own.Stat(FileName)
	if err != nil {
		return err
	}
	journal, err := s.own.Stat(JournalName)
	if err != nil {
		return err
	}
	s.seen = view{snap: snap, journal: journal, offset: int64(head.Len())}
	return nil
}

// appendLine appends one entry to the journal and syncs it, first cutting
// off a line a crashed writer left unfinished.
func (s *Store) appendLine(line []byte) error {
	fh, err := s.own.OpenFile(JournalName, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing state journal: %w", err)
	}
	defer fh.Close()
	if s.seen.torn {
		if err := fh.Truncate(s.seen.offset); err != nil {
			return fmt.Errorf("cutting an unfinished line off the state journal: %w", err)
		}
	}
	if _, err := fh.WriteAt(line, s.seen.offset); err != nil {
		return fmt.Errorf("writing state journal: %w", err)
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("syncing state journal: %w", err)
	}
	info, err := fh.Stat()
	if err != nil {
		return err
	}
	s.seen.journal, s.seen.offset, s.seen.torn = info, s.seen.offset+int64(len(line)), false
	s.seen.entries++
	return nil
}
