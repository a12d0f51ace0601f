package reconcile

import (
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// The data plane's reads are reused only while their files are unchanged:
// a destroy (the overrides and the state change) is seen by the next
// command at once, and so is an edit of the spec.
func TestSharedReadsSeeEveryChange(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	if _, err := h.eng.Target(h.ws(), "api"); err != nil {
		t.Fatal(err)
	}
	first, _ := h.eng.LoadShared(h.ws())
	if again, _ := h.eng.LoadShared(h.ws()); again != first {
		t.Error("an unchanged workspace was read again")
	}
	if _, err := h.converge(Options{Targets: []string{"api"},
		Request: Request{Op: Destroy, Sandboxes: []string{"api"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.Target(h.ws(), "api"); coded.Of(err, "").Code != coded.InstanceTerminal {
		t.Errorf("a command in the sandbox just destroyed: %v", err)
	}
	h.writeSpec("[vm]\ndriver = \"sim\"\ncpus = 3\n[sandboxes.api]\n[sandboxes.web]\n")
	if r, _ := h.eng.LoadShared(h.ws()); r == first || r.Config.Sandboxes["web"].VM.CPUs != 3 {
		t.Errorf("an edited spec was not read again")
	}
}
