package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/state/statefile"
)

// journal is how sbf keeps a file that changes a little at a time (the
// state journal, the host index, the ledger): a head, then one line per
// write holding only what it changed (package statefile says what a line
// holds). A value remembers what it read, so a long-lived process reads
// only the lines others appended since; writers serialise themselves (a
// lock file beside it). When the lines since the head would outgrow the
// live content (and a floor), the writer rewrites the file whole instead:
// the file stays within a small multiple of what it holds, and a write
// costs what it changed, amortised. The file is sbf's own (package
// ownfile): a link there, or a file larger than the reader's limit, is an
// error, never read.
type journal struct {
	file  ownfile.File
	seen  fs.FileInfo // as last read or written (nil: there was no file)
	off   int64       // bytes of the whole lines applied
	head  int64       // bytes of the head line
	lines int         // lines applied after the head
	torn  bool        // the file ends in a line a writer never finished
	reads int         // reads that found bytes (a look that found nothing new reads none)
}

// compactFloor is the least the lines after a head may take before a
// write rewrites the file: below it, a rewrite costs more than it saves.
var compactFloor int64 = 64 << 10

// read returns the whole lines added since the last look, or every line
// (fresh: the first is the head) when the file is not the one last read.
// A missing file has no lines (fresh when there was one).
func (j *journal) read(limit int64) (lines []byte, fresh bool, err error) {
	fh, err := j.file.OpenFile(os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		fresh = j.seen != nil
		*j = journal{file: j.file, reads: j.reads}
		return nil, fresh, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, false, err
	}
	if info.Size() > limit {
		return nil, false, &ownfile.Error{Path: j.file.Path(), Problem: fmt.Sprintf("%d bytes", info.Size()), Limit: limit}
	}
	if fresh = j.seen == nil || !os.SameFile(info, j.seen) || info.Size() < j.off; fresh {
		*j = journal{file: j.file, reads: j.reads} // a failure below leaves it to be read whole
	}
	data := make([]byte, info.Size()-j.off)
	if _, err := fh.ReadAt(data, j.off); err != nil {
		return nil, false, err
	}
	if len(data) > 0 {
		j.reads++
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	data, j.torn, j.seen = data[:whole], whole < len(data), info
	if n := bytes.Count(data, []byte("\n")); fresh && n > 0 {
		j.head, j.lines = int64(bytes.IndexByte(data, '\n')+1), n-1
	} else {
		j.lines += n
	}
	j.off += int64(whole)
	return data, fresh, nil
}

// due reports whether a write of n bytes should rewrite the file instead:
// the lines since the head would take more than the live content (the
// head's, or the file's it names: live bytes) and the floor.
func (j *journal) due(n int, live int64) bool {
	return j.seen == nil || j.off-j.head+int64(n) > max(compactFloor, live)
}

// append writes one line after the lines read, first cutting off a line a
// crashed writer left unfinished; durable syncs it, else its owner does
// (Store.Sync: one fsync for the writes of a step).
func (j *journal) append(line []byte, durable bool) error {
	fh, err := j.file.OpenFile(os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	defer fh.Close()
	if j.torn {
		if err := fh.Truncate(j.off); err != nil {
			return fmt.Errorf("cutting an unfinished line off %s: %w", j.file.Path(), err)
		}
	}
	if _, err := fh.WriteAt(line, j.off); err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	if durable {
		if err := syncFile(fh); err != nil {
			return fmt.Errorf("syncing %s: %w", j.file.Path(), err)
		}
	}
	info, err := fh.Stat()
	if err != nil {
		return err
	}
	j.seen, j.off, j.torn = info, j.off+int64(len(line)), false
	j.lines++
	return nil
}

// replace writes the file anew (atomically), holding only head.
// syncFile syncs an open file, counted (readcount.Syncs).
func syncFile(fh *os.File) error {
	readcount.Synced()
	return fh.Sync()
}

func (j *journal) replace(head []byte) error {
	if err := j.file.Dir.WriteFile(j.file.Name, head, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", j.file.Path(), err)
	}
	info, err := j.file.Dir.Stat(j.file.Name)
	if err != nil {
		return err
	}
	*j = journal{file: j.file, seen: info, off: int64(len(head)), head: int64(len(head)), reads: j.reads}
	return nil
}

// journalMap is a host-wide map kept in a journal whose head holds the
// whole map. A damaged file is read as absent: these maps are caches of
// facts kept elsewhere, rebuilt by whoever finds them gone.
type journalMap[V, M any] struct {
	journal
	m     map[string]V // nil: there is no file
	meta  M
	limit int64 // the largest file read (0: maxMapBytes)
}

type mapLine[V, M any] = statefile.JournalLine[V, M]

// maxMapBytes bounds a host-wide map's file: its map and at most as many
// bytes of changes, for thousands of instances.
const maxMapBytes = 16 << 20

// refresh reads what changed since the last look: the new lines of the
// same file, or the whole file when it was rewritten.
func (j *journalMap[V, M]) refresh() error {
	limit := j.limit
	if limit == 0 {
		limit = maxMapBytes
	}
	data, fresh, err := j.read(limit)
	if err != nil {
		return fmt.Errorf("reading %s: %w", j.file.Path(), err)
	}
	if fresh || j.seen == nil { // rewritten, or there is none
		var zero M
		j.m, j.meta = nil, zero
	}
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		var l mapLine[V, M]
		switch {
		case json.Unmarshal(line, &l) != nil || fresh && l.Map == 0:
			j.m, j.seen = nil, nil // damaged: absent, and read whole next time
			return nil
		case fresh:
			j.m, j.meta, fresh = l.All, l.Meta, false
			if j.m == nil {
				j.m = map[string]V{}
			}
		case j.m != nil:
			j.apply(l.Put, l.Delete)
		}
		data = rest
	}
	return nil
}

func (j *journalMap[V, M]) apply(put map[string]V, del []string) {
	for k, v := range put {
		j.m[k] = v
	}
	for _, k := range del {
		delete(j.m, k)
	}
}

// change appends one line holding the change, or rewrites the file when
// the changes outgrow the map. Nothing is written when there is no file
// (rewrite makes one) or no change. A change that is not durable is not
// synced: one whose loss to a power cut leaves a cache that is still
// right (a superset of the ledger's instances).
func (j *journalMap[V, M]) change(put map[string]V, del []string, durable bool) error {
	if j.m == nil || len(put) == 0 && len(del) == 0 {
		return nil
	}
	j.apply(put, del)
	line, err := statefile.EncodeLine(mapLine[V, M]{Put: put, Delete: del})
	if err != nil {
		return err
	}
	if j.due(len(line), j.head) {
		return j.rewrite()
	}
	return j.append(line, durable)
}

// rewrite writes the whole map (an empty one when there was none).
func (j *journalMap[V, M]) rewrite() error {
	if j.m == nil {
		j.m = map[string]V{}
	}
	head, err := statefile.EncodeLine(mapLine[V, M]{Map: 1, All: j.m, Meta: j.meta})
	if err != nil {
		return err
	}
	if err := j.file.Dir.Make(); err != nil {
		return fmt.Errorf("creating %s: %w", j.file.Dir.Path(), err)
	}
	return j.replace(head)
}

// headMeta is what the head of a journal map's file says beside its
// entries, read from its first bytes only (the head encodes it before
// them): a look that costs the same whatever the file holds. A missing
// file, or a head that does not say, is the zero M.
func headMeta[M any](file ownfile.File) (M, error) {
	var meta M
	fh, err := file.OpenFile(os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return meta, nil
	}
	if err != nil {
		return meta, err
	}
	defer fh.Close()
	dec := json.NewDecoder(io.LimitReader(fh, 64<<10))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return meta, nil // not a head: whoever reads it whole says so
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return meta, nil
		}
		switch key {
		case "meta":
			if err := dec.Decode(&meta); err != nil {
				var zero M
				return zero, nil
			}
			return meta, nil
		case "all", "put", "delete":
			return meta, nil // the entries come after meta: there is none
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return meta, nil
		}
	}
	return meta, nil
}
