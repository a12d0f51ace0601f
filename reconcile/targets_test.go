package reconcile

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/state"
)

// A loop pass locks the sandboxes it knows, then reads the desired state
// again: one a request added in between is that request's run's, and the
// pass leaves it alone (it would otherwise plan it from a half-written
// record, beside the run that holds it).
func TestARunActsOnlyOnTheSandboxesItHolds(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	r, err := h.eng.Load(h.ws())
	if err != nil {
		t.Fatal(err)
	}
	lock := func(name string) *flock.Lock {
		l, err := flock.Acquire(context.Background(), filepath.Join(t.TempDir(), name+".lock"), flock.Holder{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release() })
		return l
	}
	rec := &state.File{Sandboxes: map[string]*state.Sandbox{}}
	u := &run{r: r, rec: rec, locks: &held{locks: map[string]*flock.Lock{"api": lock("api")},
		busy: map[string]*flock.Holder{}}}
	if got, none := u.targets(); !slices.Equal(got, []string{"api"}) || none {
		t.Errorf("a pass holding api of api and web acts on %v (none %v); want [api]", got, none)
	}
	u.locks.locks["web"] = lock("web")
	if got, none := u.targets(); got != nil || none {
		t.Errorf("a pass holding every sandbox acts on %v (none %v); want all (nil)", got, none)
	}
}
