package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JournalVersion is the journal format this build writes.
const JournalVersion = 1

// The journal (.sandboxforge/state.journal) holds the writes made since
// state.json was last written whole, one JSON line each, so a transition
// costs what it changed rather than the whole state. Its first line names
// the file it extends; a journal whose head does not match state.json
// (state.json was written whole, or restored by hand, after it) is stale
// and read as empty.

// JournalHead is the journal's first line.
type JournalHead struct {
	Version int    `json:"journal"`
	Lineage string `json:"lineage"` // state.json's ("" when there was none)
	Serial  int64  `json:"serial"`  // state.json's: the first entry is Serial+1
}

// Entry is one write: the records it replaced. A record that is null was
// dropped.
type Entry struct {
	Serial    int64               `json:"serial"`
	Lineage   string              `json:"lineage"`
	WrittenBy string              `json:"written_by,omitempty"`
	Sandboxes map[string]*Sandbox `json:"sandboxes,omitempty"`
	Tasks     map[string]*Task    `json:"tasks,omitempty"`
	// Snapshots is the whole list when the write changed it.
	Snapshots *[]*Snapshot `json:"snapshots,omitempty"`
}

// Extends reports whether a journal with this head continues f.
func (h JournalHead) Extends(f *File) bool {
	return h.Version == JournalVersion && h.Lineage == f.Lineage && h.Serial == f.Serial
}

// Apply makes the entry's changes to f (which it continues: the caller
// checked the serial).
func (e *Entry) Apply(f *File) {
	f.Serial, f.Lineage, f.WrittenBy = e.Serial, e.Lineage, e.WrittenBy
	if f.Sandboxes == nil {
		f.Sandboxes = map[string]*Sandbox{}
	}
	for name, sb := range e.Sandboxes {
		if sb == nil {
			delete(f.Sandboxes, name)
		} else {
			f.Sandboxes[name] = sb
		}
	}
	for id, t := range e.Tasks {
		switch {
		case t == nil:
			delete(f.Tasks, id)
		case f.Tasks == nil:
			f.Tasks = map[string]*Task{id: t}
		default:
			f.Tasks[id] = t
		}
	}
	if e.Snapshots != nil {
		f.Snapshots = *e.Snapshots
	}
}

// AppendLine encodes v as one journal line.
func AppendLine(buf *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a state journal line: %w", err)
	}
	buf.Write(data)
	buf.WriteByte('\n')
	return nil
}

// ErrStaleJournal is a journal that does not continue the state file.
var ErrStaleJournal = errors.New("the state journal does not continue state.json")

// ReadJournal applies the complete lines of a journal to f, which must be
// the file the journal's head names (ErrStaleJournal otherwise). It
// returns how many bytes it consumed: a last line without its newline is
// a write that never finished, left for the next writer to cut off.
func ReadJournal(data []byte, f *File) (int, error) {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return 0, nil // not even a whole head: nothing was written after it
	}
	var head JournalHead
	if err := json.Unmarshal(line, &head); err != nil {
		return 0, fmt.Errorf("state journal head: %w", err)
	}
	if head.Version > JournalVersion {
		return 0, fmt.Errorf("state journal written by a newer sbf (version %d; this build reads %d)",
			head.Version, JournalVersion)
	}
	if !head.Extends(f) {
		return 0, ErrStaleJournal
	}
	n, err := ReadEntries(rest, f)
	return len(line) + 1 + n, err
}

// ReadEntries applies complete entry lines (no head) to f and returns the
// bytes consumed.
func ReadEntries(data []byte, f *File) (int, error) {
	consumed := 0
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return consumed, nil
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return consumed, fmt.Errorf("state journal line at byte %d: %w", consumed, err)
		}
		if e.Serial != f.Serial+1 || f.Lineage != "" && e.Lineage != f.Lineage {
			return consumed, fmt.Errorf("state journal line at byte %d: serial %d (lineage %s) does not follow %d (%s)",
				consumed, e.Serial, e.Lineage, f.Serial, f.Lineage)
		}
		e.Apply(f)
		consumed += len(line) + 1
		data = rest
	}
}
