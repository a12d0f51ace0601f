package reconcile

import (
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// An intent's zero value asks nothing: naming no sandbox means every one
// only when the intent says All, and a name is never empty. A door that
// lost its list is refused before anything is read or changed.
func TestAnIntentsZeroValueAsksNothing(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	api, before := h.instance("api"), h.logLen()
	for _, in := range []Intent{Keep{}, Renew{}, Up{}, Destroy{}, Destroy{Force: true}, Extend{}, Prepare{},
		Destroy{Sandboxes: []string{"api"}, All: true}, Renew{Sandboxes: []string{""}}} {
		_, err := h.converge(Options{Intent: in})
		if c := coded.Of(err, ""); c == nil || c.Code != coded.InvalidArguments {
			t.Errorf("%T%+v: %v, want INVALID_ARGUMENTS", in, in, err)
		}
	}
	if n, ops := h.mutations(before); n != 0 {
		t.Errorf("a refused intent changed the world: %v", ops)
	}
	if _, ok := h.world()[api]; !ok || api == "" {
		t.Error("api is gone")
	}
	if _, err := h.converge(Options{Intent: Destroy{All: true}}); err != nil {
		t.Fatalf("Destroy{All}: %v", err)
	}
	if _, ok := h.world()[api]; ok {
		t.Error("Destroy{All} left api")
	}
}
