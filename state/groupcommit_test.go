package state

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// Writes append without syncing; Sync syncs once for every write made
// before it, whichever goroutine made them, and not at all when a Sync
// since covered them. Every write is in the file before any Sync.
func TestGroupCommitSharesItsSync(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	defer s.Close()
	writeSandbox(t, s, "first", Running) // the first write makes state.json whole
	before := readcount.Syncs()
	for i := range 5 {
		writeSandbox(t, s, fmt.Sprintf("w%d", i), Running)
	}
	if n := readcount.Syncs() - before; n != 0 {
		t.Errorf("5 writes synced %d times", n)
	}
	if f := readState(t, dir); len(f.Sandboxes) != 6 {
		t.Errorf("before Sync a reader sees %d records, want 6", len(f.Sandboxes))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := readcount.Syncs() - before; n != 1 {
		t.Errorf("two Syncs after 5 writes: %d fsyncs, want 1", n)
	}
	const writers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*rounds)
	before = readcount.Syncs()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				errs <- s.Write(func(tx *Tx) { tx.Sandbox(fmt.Sprintf("p%d-%d", w, r)).Phase = Running })
				errs <- s.Sync()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := readcount.Syncs() - before; n > writers*rounds {
		t.Errorf("%d writes each followed by a Sync: %d fsyncs", writers*rounds, n)
	}
	if f := readState(t, dir); len(f.Sandboxes) != 6+writers*rounds {
		t.Errorf("%d records, want %d", len(f.Sandboxes), 6+writers*rounds)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.synced != s.writes {
		t.Errorf("after every Sync returned: %d writes, %d synced", s.writes, s.synced)
	}
}
