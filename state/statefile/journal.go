package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A journal is one of sbf's files that change a little at a time: JSON
// lines, the first a head (the whole map, or the file that holds it),
// each later one a write holding only what it changed, keyed by name. A
// last line without its newline is a write that never finished: readers
// skip it and the next writer cuts it off. The state journal
// (.sandboxforge/state.journal) continues state.json: its head names the
// state.json it extends (a journal whose head does not match, state.json
// written whole or restored by hand after it, is stale and read as empty)
// and its records are keyed "sandboxes/NAME", "tasks/ID" and "snapshots".

// JournalLine is one line of a journal. V is an entry, M what the file
// says beside its entries.
type JournalLine[V, M any] struct {
	Map int `json:"map,omitempty"` // the head's: 1
	// Journal is the state journal head's version, so that a build that
	// reads only version 1 refuses the file rather than skip its lines.
	Journal int          `json:"journal,omitempty"`
	All     map[string]V `json:"all,omitempty"` // the head's: every entry
	Meta    M            `json:"meta,omitzero"`
	Put     map[string]V `json:"put,omitempty"`    // a write's: entries made or replaced…
	Delete  []string     `json:"delete,omitempty"` // …and dropped
}

// EncodeLine is v as one journal line.
func EncodeLine(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding a journal line: %w", err)
	}
	return append(data, '\n'), nil
}

// JournalVersion is the state journal format this build writes: version 2
// is JournalLines; version 1 (an entry per write holding the records it
// replaced) is still read, and the next write replaces it.
const JournalVersion = 2

// StateMark is what a state journal line says of the file: the head, the
// lineage and serial of the state.json it continues; a write, its serial.
type StateMark struct {
	Lineage   string `json:"lineage,omitempty"`
	Serial    int64  `json:"serial"`
	WrittenBy string `json:"written_by,omitempty"`
}

// StateLine is a line of the state journal: records as their JSON.
type StateLine = JournalLine[json.RawMessage, StateMark]

// The state journal's record keys.
const SnapshotsKey = "snapshots" // the whole list

func SandboxKey(name string) string { return "sandboxes/" + name }
func TaskKey(id string) string      { return "tasks/" + id }

// JournalHead is the head of a state journal that continues f as it is.
func JournalHead(f *File) StateLine {
	return StateLine{Map: 1, Journal: JournalVersion, Meta: StateMark{Lineage: f.Lineage, Serial: f.Serial}}
}

// ErrStaleJournal is a journal that does not continue the state file.
var ErrStaleJournal = errors.New("the state journal does not continue state.json")

// ReadJournal applies a state journal's whole lines to f, which its head
// must continue (ErrStaleJournal otherwise), and returns its version (0:
// not even a head).
func ReadJournal(data []byte, f *File) (int, error) {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return 0, nil
	}
	var head struct {
		StateLine
		Lineage string `json:"lineage"` // version 1's
		Serial  int64  `json:"serial"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return 0, fmt.Errorf("state journal head: %w", err)
	}
	switch {
	case head.Journal > JournalVersion:
		return 0, fmt.Errorf("state journal written by a newer sbf (version %d; this build reads %d)",
			head.Journal, JournalVersion)
	case head.Journal == 1 && head.Lineage == f.Lineage && head.Serial == f.Serial:
		return 1, readV1(rest, f)
	case head.Journal != JournalVersion || head.Meta.Lineage != f.Lineage || head.Meta.Serial != f.Serial:
		return 0, ErrStaleJournal
	}
	return JournalVersion, ReadChanges(rest, f)
}

// ReadChanges applies whole write lines (no head) to f.
func ReadChanges(data []byte, f *File) error {
	return eachLine(data, func(line []byte) error {
		var l StateLine
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		if l.Meta.Serial != f.Serial+1 {
			return fmt.Errorf("serial %d does not follow %d", l.Meta.Serial, f.Serial)
		}
		f.Serial, f.WrittenBy = l.Meta.Serial, l.Meta.WrittenBy
		return f.apply(l.Put, l.Delete)
	})
}

// apply replaces the records at put's keys and drops those at del's.
func (f *File) apply(put map[string]json.RawMessage, del []string) error {
	for _, key := range del {
		if err := f.put(key, nil); err != nil {
			return err
		}
	}
	for key, raw := range put {
		if err := f.put(key, raw); err != nil {
			return err
		}
	}
	return nil
}

// put replaces the record at key with raw (nil: drops it).
func (f *File) put(key string, raw json.RawMessage) error {
	kind, name, _ := strings.Cut(key, "/")
	var err error
	switch {
	case kind == "sandboxes":
		err = putRecord(f.Sandboxes, name, raw)
	case kind == "tasks":
		if f.Tasks == nil {
			f.Tasks = map[string]*Task{}
		}
		err = putRecord(f.Tasks, name, raw)
	case key == SnapshotsKey:
		f.Snapshots = nil
		if raw != nil {
			err = json.Unmarshal(raw, &f.Snapshots)
		}
	default:
		err = errors.New("no such record")
	}
	if err != nil {
		return fmt.Errorf("record %q: %w", key, err)
	}
	return nil
}

func putRecord[T any](m map[string]*T, name string, raw json.RawMessage) error {
	if raw == nil || string(raw) == "null" {
		delete(m, name)
		return nil
	}
	rec := new(T)
	m[name] = rec
	return json.Unmarshal(raw, rec)
}

// eachLine calls do with each whole line, naming the line that failed.
func eachLine(data []byte, do func(line []byte) error) error {
	for at := 0; ; {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return nil
		}
		if err := do(line); err != nil {
			return fmt.Errorf("state journal line at byte %d: %w", at, err)
		}
		at, data = at+len(line)+1, rest
	}
}

// entryV1 is a version 1 write: the records it replaced (null: dropped),
// the snapshot list whole when it changed.
type entryV1 struct {
	Serial    int64                      `json:"serial"`
	Lineage   string                     `json:"lineage"`
	WrittenBy string                     `json:"written_by,omitempty"`
	Sandboxes map[string]json.RawMessage `json:"sandboxes,omitempty"`
	Tasks     map[string]json.RawMessage `json:"tasks,omitempty"`
	Snapshots json.RawMessage            `json:"snapshots,omitempty"`
}

// readV1 applies a version 1 journal's writes to f.
func readV1(data []byte, f *File) error {
	return eachLine(data, func(line []byte) error {
		var e entryV1
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		if e.Serial != f.Serial+1 || f.Lineage != "" && e.Lineage != f.Lineage {
			return fmt.Errorf("serial %d (lineage %s) does not follow %d (%s)", e.Serial, e.Lineage, f.Serial, f.Lineage)
		}
		f.Serial, f.Lineage, f.WrittenBy = e.Serial, e.Lineage, e.WrittenBy
		put := map[string]json.RawMessage{}
		for name, raw := range e.Sandboxes {
			put[SandboxKey(name)] = raw
		}
		for id, raw := range e.Tasks {
			put[TaskKey(id)] = raw
		}
		if e.Snapshots != nil {
			put[SnapshotsKey] = e.Snapshots
		}
		return f.apply(put, nil)
	})
}
