package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// A run locks the sandboxes its first plan acts on, then reads the desired
// state again: one a request added in between is that request's run's, and
// the run leaves it alone (it would otherwise plan it from a half-written
// record, beside the run that holds it). Before it locks, its first plan
// looks at its targets (all: nil).
func TestARunActsOnlyOnTheSandboxesItHolds(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	r, err := h.eng.Load(h.ws())
	if err != nil {
		t.Fatal(err)
	}
	hold := func(names ...string) *admission.Held {
		h, err := admission.Locks{}.Sandboxes(context.Background(), t.TempDir(), names, admission.WaitBusy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Release)
		return h
	}
	rec := &state.File{Sandboxes: map[string]*state.Sandbox{}}
	u := &run{r: r, rec: rec}
	if got, none := u.targets(); got != nil || none {
		t.Errorf("a first plan acts on %v (none %v); want all (nil)", got, none)
	}
	u.locks = hold("api")
	if got, none := u.targets(); !slices.Equal(got, []string{"api"}) || none {
		t.Errorf("a pass holding api of api and web acts on %v (none %v); want [api]", got, none)
	}
	u.locks = hold("api", "web")
	if got, none := u.targets(); !slices.Equal(got, []string{"api", "web"}) || none {
		t.Errorf("a pass holding every sandbox acts on %v (none %v); want [api web]", got, none)
	}
	u.opts.Targets = []string{"web"}
	if got, none := u.targets(); !slices.Equal(got, []string{"web"}) || none {
		t.Errorf("a run asked about web, holding it and its source api, acts on %v (none %v); want [web]", got, none)
	}
}

// A request's run claims a spare for its new sandbox after the loop pass
// beside it read the desired state: the pass sees an instance labelled for
// a sandbox it neither knows nor holds. It leaves it to the run that holds
// it (and a plan does not show it as a delete); once nobody holds it and
// nothing declares or records it, it is an orphan, and the pass that then
// holds it deletes it.
func TestAPassLeavesAnInstanceClaimedBesideItToItsRun(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	h.fill()
	spares, _ := h.spares()
	d, _ := sim.New(sim.Options{Dir: h.simDir})
	lockPath := filepath.Join(h.root, spec.Dir, admission.LocksDir, "inst_new.lock")
	os.MkdirAll(filepath.Dir(lockPath), 0o755)
	l, err := flock.Acquire(context.Background(), ownfile.PathFile(lockPath), flock.Holder{Command: "create_instance"},
		0)
	if err != nil {
		t.Fatal(err)
	}
	owner := drivers.Owner{WorkspaceID: h.workspaceID(), Sandbox: "inst_new", Spare: true, Since: t0}
	if err := d.Claim(context.Background(), spares[0], owner); err != nil {
		t.Fatal(err)
	}
	if res, err := h.planWith(passOptions()); err != nil || strings.Contains(steps(res.Plan), "inst_new") ||
		res.Busy == nil {
		t.Errorf("a plan beside the run that holds inst_new: %s (busy %v) %v", steps(res.Plan), res.Busy, err)
	}
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Plan.Actions {
		if a.Sandbox == "inst_new" {
			t.Errorf("a pass acts on a sandbox another run holds: %s %s (%s)", a.Kind, a.Subject(), a.Cause)
		}
	}
	if _, ok := h.world()[spares[0]]; !ok {
		t.Fatal("the pass deleted the spare a request's run had just claimed")
	}
	if res.Busy == nil {
		t.Error("the result does not say another run held a sandbox")
	}
	l.Release()
	res, err = h.reconcile()
	if err != nil || !strings.Contains(steps(res.Plan), "inst_new:delete") {
		t.Errorf("an orphan nobody holds: %s %v", steps(res.Plan), err)
	}
}

// The same, with the request's run over before the pass looks: the files
// name the sandbox by then, and the pass leaves it to the next one, which
// reads it whole.
func TestAPassLeavesASandboxMadeWhileItPlannedToTheNext(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	h.fill()
	ctx := context.Background()
	u, err := h.eng.begin(ctx, h.ws(), passOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.up("inst_new"); err != nil {
		u.locks.Release()
		t.Fatal(err)
	}
	res, err := h.eng.convergeSandboxes(ctx, u, &Result{Resolved: u.r, recorded: u.rec})
	u.locks.Release()
	if err != nil {
		t.Fatal(err)
	}
	if s := steps(res.Plan); strings.Contains(s, "inst_new") {
		t.Errorf("a pass that read before inst_new was made plans %s", s)
	}
	if _, owned := h.spares(); owned["inst_new@"+h.workspaceID()] == "" {
		t.Error("inst_new lost the spare it adopted")
	}
	if res, err := h.reconcile(); err != nil || len(res.Plan.Actions) != 0 {
		t.Errorf("the next pass: %s %v", steps(res.Plan), err)
	}
}
