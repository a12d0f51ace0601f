package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// Ledger is the host-wide set of instances that hold a place under the
// instance cap: every instance sbf admitted and has not seen go. It is a
// superset of what counts (an instance deleted behind sbf's back stays
// until the next full count replaces the set), so "the ledger has room"
// is enough to admit without listing every backend. One file: the set
// as a first line, then one line per change, rewritten whole when the
// changes outgrow the set. The caller serialises access (the admission
// lock); a Ledger value remembers what it read, so a long-lived process
// reads only the lines others added since.
type Ledger struct {
	path  string
	set   map[string]bool
	seen  fs.FileInfo
	off   int64
	lines int       // change lines after the first
	count time.Time // when the set was last counted in full
}

// ledgerLine is one line of the ledger file.
type ledgerLine struct {
	Version   int       `json:"ledger,omitempty"`
	Instances []string  `json:"instances,omitempty"` // the first line: the whole set…
	CountedAt time.Time `json:"counted_at,omitzero"` // …and when a full count made it
	Add       string    `json:"add,omitempty"`
	Remove    string    `json:"remove,omitempty"`
}

// OpenLedger uses dir/ledger.
func OpenLedger(dir string) *Ledger { return &Ledger{path: filepath.Join(dir, "ledger")} }

// Instances is the set as the file holds it now (nil, false: there is no
// ledger yet, so nothing is known and a full count must seed it).
func (l *Ledger) Instances() (map[string]bool, bool, error) {
	if err := l.refresh(); err != nil {
		return nil, false, err
	}
	return l.set, l.set != nil, nil
}

// Add records an admitted instance (nothing, when there is no ledger).
func (l *Ledger) Add(instance string) error {
	return l.change(ledgerLine{Add: instance}, func() { l.set[instance] = true })
}

// Remove records an instance that is gone.
func (l *Ledger) Remove(instance string) error {
	if err := l.refresh(); err != nil || l.set == nil || !l.set[instance] {
		return err
	}
	return l.change(ledgerLine{Remove: instance}, func() { delete(l.set, instance) })
}

// CountedAt is when the set was last counted in full (zero: never).
func (l *Ledger) CountedAt() time.Time { return l.count }

// Reset replaces the set with a full count's, made at now.
func (l *Ledger) Reset(instances map[string]bool, now time.Time) error {
	l.set, l.count = maps.Clone(instances), now
	if l.set == nil {
		l.set = map[string]bool{}
	}
	return l.rewrite()
}

func (l *Ledger) change(line ledgerLine, apply func()) error {
	if err := l.refresh(); err != nil {
		return err
	}
	if l.set == nil {
		return nil // nothing is known: the next admission counts in full and seeds the ledger
	}
	apply()
	if l.lines >= max(64, 2*len(l.set)) {
		return l.rewrite()
	}
	data, err := json.Marshal(line)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing the instance ledger: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteAt(append(data, '\n'), l.off); err != nil {
		return fmt.Errorf("writing the instance ledger: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing the instance ledger: %w", err)
	}
	l.off += int64(len(data) + 1)
	l.lines++
	l.seen, err = f.Stat()
	return err
}

func (l *Ledger) rewrite() error {
	head, err := json.Marshal(ledgerLine{Version: 1, Instances: slices.Sorted(maps.Keys(l.set)), CountedAt: l.count})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(l.path), err)
	}
	if err := atomicfile.WriteFile(l.path, append(head, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the instance ledger: %w", err)
	}
	l.off, l.lines = int64(len(head)+1), 0
	l.seen, err = os.Stat(l.path)
	return err
}

// refresh reads what changed since the last look: the new lines of the
// same file, or the whole file when it was rewritten.
func (l *Ledger) refresh() error {
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		l.set, l.seen, l.off, l.lines = nil, nil, 0, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the instance ledger: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	from := l.off
	if l.seen == nil || !os.SameFile(info, l.seen) || info.Size() < l.off {
		l.set, from, l.lines = nil, 0, 0
	}
	data := make([]byte, info.Size()-from)
	if _, err := f.ReadAt(data, from); err != nil {
		return fmt.Errorf("reading the instance ledger: %w", err)
	}
	n, err := l.apply(data)
	l.off, l.seen = from+int64(n), info
	return err
}

// apply reads whole lines; a last line without its newline is a write
// that never finished, and the next change writes over it.
func (l *Ledger) apply(data []byte) (int, error) {
	consumed := 0
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return consumed, nil
		}
		var ll ledgerLine
		if err := json.Unmarshal(line, &ll); err != nil {
			// A damaged ledger is only a cache of counts: the next full count rewrites it.
			l.set = nil
			return consumed, nil
		}
		switch {
		case ll.Version != 0:
			l.set, l.count = map[string]bool{}, ll.CountedAt
			for _, name := range ll.Instances {
				l.set[name] = true
			}
		case l.set == nil:
		case ll.Add != "":
			l.set[ll.Add], l.lines = true, l.lines+1
		case ll.Remove != "":
			delete(l.set, ll.Remove)
			l.lines++
		}
		consumed += len(line) + 1
		data = rest
	}
}
