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
	Journal int `json:"journal,omitempty"`
	// Meta comes before the entries, so a reader may take it from the
	// head's first bytes without reading every entry (state.headMeta).
	Meta   M            `json:"meta,omitzero"`
	All    map[string]V `json:"all,omitempty"`    // the head's: every entry
	Put    map[string]V `json:"put,omitempty"`    // a write's: entries made or replaced…
	Delete []string     `json:"delete,omitempty"` // …and dropped
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
// is JournalLines. Version 1's lines (lineage and serial at the top, then
// the records a write replaced, null for one dropped) are still read.
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
// must continue (ErrStaleJournal otherwise).
func ReadJournal(data []byte, f *File) error {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil // not even a whole head: nothing was written after it
	}
	head, err := decodeLine(line)
	if err != nil {
		return fmt.Errorf("state journal head: %w", err)
	}
	if head.Journal > JournalVersion {
		return fmt.Errorf("state journal written by a newer sbf (version %d; this build reads %d)",
			head.Journal, JournalVersion)
	}
	if head.Journal == 0 || head.Meta.Lineage != f.Lineage || head.Meta.Serial != f.Serial {
		return ErrStaleJournal
	}
	return ReadChanges(rest, f)
}

// ReadChanges applies whole write lines (no head) to f.
func ReadChanges(data []byte, f *File) error {
	for at := 0; ; {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return nil
		}
		l, err := decodeLine(line)
		if err == nil && (l.Meta.Serial != f.Serial+1 || l.Meta.Lineage != "" && l.Meta.Lineage != f.Lineage) {
			err = fmt.Errorf("serial %d (lineage %s) does not follow %d (%s)", l.Meta.Serial, l.Meta.Lineage,
				f.Serial, f.Lineage)
		}
		for _, key := range l.Delete {
			if err == nil {
				err = f.put(key, nil)
			}
		}
		for key, raw := range l.Put {
			if err == nil {
				err = f.put(key, raw)
			}
		}
		if err != nil {
			return fmt.Errorf("state journal line at byte %d: %w", at, err)
		}
		f.Serial, f.WrittenBy = l.Meta.Serial, l.Meta.WrittenBy
		at, data = at+len(line)+1, rest
	}
}

// decodeLine reads a state journal line of either version as this
// build's.
func decodeLine(line []byte) (StateLine, error) {
	var l struct {
		StateLine
		StateMark                            // version 1's
		Sandboxes map[string]json.RawMessage `json:"sandboxes"`
		Tasks     map[string]json.RawMessage `json:"tasks"`
		Snapshots json.RawMessage            `json:"snapshots"`
	}
	if err := json.Unmarshal(line, &l); err != nil || l.Journal > 1 || l.StateLine.Meta.Serial != 0 {
		return l.StateLine, err
	}
	v2 := StateLine{Journal: l.Journal, Meta: l.StateMark, Put: map[string]json.RawMessage{}}
	for name, raw := range l.Sandboxes {
		v2.Put[SandboxKey(name)] = raw
	}
	for id, raw := range l.Tasks {
		v2.Put[TaskKey(id)] = raw
	}
	if l.Snapshots != nil {
		v2.Put[SnapshotsKey] = l.Snapshots
	}
	return v2, nil
}

// put replaces the record at key with raw (nil or null: drops it).
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
