package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sandboxforge/sbf/internal/ownfile"
)

// journalMap is a host-wide map kept in one file: the whole map as the
// first line, then one line per change, rewritten whole when the changes
// outgrow the map. A value remembers what it read, so a long-lived process
// reads only the lines others added since; writers serialise themselves
// (a lock file beside it). A damaged file is read as absent: these maps
// are caches of facts kept elsewhere, rebuilt by whoever finds them gone.
// The file is sbf's own (package ownfile): a link there, or a file larger
// than maxMapBytes, is an error, never read.
type journalMap[V any] struct {
	file  ownfile.File
	m     map[string]V // nil: there is no file
	meta  json.RawMessage
	seen  fs.FileInfo
	off   int64
	lines int
	reads int // refreshes that read bytes (a look that found nothing new reads none)
}

type journalLine[V any] struct {
	Version int             `json:"map,omitempty"`
	All     map[string]V    `json:"all,omitempty"` // the first line: the whole map…
	Meta    json.RawMessage `json:"meta,omitempty"`
	Put     map[string]V    `json:"put,omitempty"` // …then changes
	Delete  []string        `json:"delete,omitempty"`
}

// maxMapBytes bounds a host-wide map's file: its map and at most as many
// change lines (64 at least), for thousands of instances.
const maxMapBytes = 16 << 20

// refresh reads what changed since the last look: the new lines of the
// same file, or the whole file when it was rewritten.
func (j *journalMap[V]) refresh() error {
	f, err := j.file.OpenFile(os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		j.m, j.meta, j.seen, j.off, j.lines = nil, nil, nil, 0, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", j.file.Path(), err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() > maxMapBytes {
		return &ownfile.Error{Path: j.file.Path(), Problem: fmt.Sprintf("%d bytes", info.Size()), Limit: maxMapBytes}
	}
	from := j.off
	if j.seen == nil || !os.SameFile(info, j.seen) || info.Size() < j.off {
		j.m, j.meta, from, j.lines = nil, nil, 0, 0
	}
	data := make([]byte, info.Size()-from)
	if len(data) > 0 {
		j.reads++
	}
	if _, err := f.ReadAt(data, from); err != nil {
		return fmt.Errorf("reading %s: %w", j.file.Path(), err)
	}
	j.off, j.seen = from+int64(j.apply(data)), info
	return nil
}

// apply reads whole lines; a last line without its newline is a write
// that never finished, which the next change writes over.
func (j *journalMap[V]) apply(data []byte) int {
	consumed := 0
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return consumed
		}
		var l journalLine[V]
		if json.Unmarshal(line, &l) != nil {
			j.m = nil
			return consumed
		}
		switch {
		case l.Version != 0:
			j.m, j.meta = l.All, l.Meta
			if j.m == nil {
				j.m = map[string]V{}
			}
		case j.m == nil:
		default:
			for k, v := range l.Put {
				j.m[k] = v
			}
			for _, k := range l.Delete {
				delete(j.m, k)
			}
			j.lines++
		}
		consumed += len(line) + 1
		data = rest
	}
}

// change appends one change line, or rewrites the file when the changes
// outgrow the map. Nothing is written when there is no file: rewrite
// makes one.
func (j *journalMap[V]) change(put map[string]V, del []string) error {
	if j.m == nil || len(put) == 0 && len(del) == 0 {
		return nil
	}
	for k, v := range put {
		j.m[k] = v
	}
	for _, k := range del {
		delete(j.m, k)
	}
	if j.lines >= max(64, len(j.m)) {
		return j.rewrite()
	}
	data, err := json.Marshal(journalLine[V]{Put: put, Delete: del})
	if err != nil {
		return err
	}
	f, err := j.file.OpenFile(os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	defer f.Close()
	if _, err := f.WriteAt(append(data, '\n'), j.off); err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", j.file.Path(), err)
	}
	j.off += int64(len(data) + 1)
	j.lines++
	j.seen, err = f.Stat()
	return err
}

// rewrite writes the whole map (an empty one when there was none).
func (j *journalMap[V]) rewrite() error {
	if j.m == nil {
		j.m = map[string]V{}
	}
	head, err := json.Marshal(journalLine[V]{Version: 1, All: j.m, Meta: j.meta})
	if err != nil {
		return err
	}
	if err := j.file.Dir.Make(); err != nil {
		return fmt.Errorf("creating %s: %w", j.file.Dir.Path(), err)
	}
	if err := j.file.Dir.WriteFile(j.file.Name, append(head, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	j.off, j.lines = int64(len(head)+1), 0
	j.seen, err = j.file.Dir.Stat(j.file.Name)
	return err
}
