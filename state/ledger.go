package state

import (
	"maps"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/ownfile"
)

// Ledger is the host-wide set of instances that hold a place under the
// instance cap: every instance sbf admitted and has not seen go. It is a
// superset of what counts (an instance deleted behind sbf's back stays
// until the next full count replaces the set), so "the ledger has room"
// is enough to admit without listing every backend. The caller serialises
// access (the admission lock); a Ledger value remembers what it read, so
// a long-lived process reads only the lines others added since.
type Ledger struct {
	mu sync.Mutex // the admission lock serialises processes; this, goroutines
	j  journalMap[bool, ledgerMeta]
}

type ledgerMeta struct {
	CountedAt time.Time `json:"counted_at,omitzero"`
}

// OpenLedger uses admission/ledger in the state home stateDir.
func OpenLedger(stateDir string) *Ledger {
	file := ownfile.At(stateDir).Sub("admission").File("ledger")
	return &Ledger{j: journalMap[bool, ledgerMeta]{journal: journal{file: file}}}
}

// Instances is the set as the file holds it now (known false: there is no
// ledger yet, so nothing is known and a full count must seed it).
func (l *Ledger) Instances() (set map[string]bool, known bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.j.refresh(); err != nil {
		return nil, false, err
	}
	return maps.Clone(l.j.m), l.j.m != nil, nil
}

// Others counts the instances the ledger holds besides instance, without
// copying the set: what an admission asks of it on every create.
func (l *Ledger) Others(instance string) (n int, known bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.j.refresh(); err != nil {
		return 0, false, err
	}
	n = len(l.j.m)
	if l.j.m[instance] {
		n--
	}
	return n, l.j.m != nil, nil
}

// Has says whether the ledger holds instance.
func (l *Ledger) Has(instance string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.j.refresh(); err != nil {
		return false, err
	}
	return l.j.m[instance], nil
}

// CountedAt is when the set was last counted in full (zero: never).
func (l *Ledger) CountedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.j.meta.CountedAt
}

// Add records an admitted instance (nothing, when there is no ledger).
func (l *Ledger) Add(instance string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.j.refresh(); err != nil {
		return err
	}
	if l.j.m[instance] {
		return nil
	}
	return l.j.change(map[string]bool{instance: true}, nil, true)
}

// Remove records an instance that is gone. It is not synced: were it lost
// to a power cut, the set would still hold every instance that counts (the
// next full count drops the one gone), so a destroy costs no fsync here.
func (l *Ledger) Remove(instance string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.j.refresh(); err != nil || !l.j.m[instance] {
		return err
	}
	return l.j.change(nil, []string{instance}, false)
}

// Reset replaces the set with a full count's, made at now.
func (l *Ledger) Reset(instances map[string]bool, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.j.m, l.j.meta = maps.Clone(instances), ledgerMeta{CountedAt: now}
	return l.j.rewrite()
}
