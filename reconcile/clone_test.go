package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/spec"
)

func (h *harness) clone(req CloneRequest) (*Result, string, error) {
	return h.eng.Clone(context.Background(), h.ws(), req)
}

func TestACloneRunsApartFromItsSource(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\ncpus = 3\n[sandboxes.api]\nports = [\"18080:80\"]\n")
	h.mustApply()
	h.guestRun(t, "api", "mkdir -p work && echo original > work/a.txt")
	res, name, err := h.clone(CloneRequest{Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	if name != "api-clone-1" || res.recorded.Sandboxes[name] == nil || res.recorded.Sandboxes[name].Phase != "running" {
		t.Fatalf("clone %q: %+v", name, res.recorded.Sandboxes[name])
	}
	if got := h.guestRun(t, name, "cat work/a.txt"); got != "original" {
		t.Errorf("the clone's disk reads %q", got)
	}
	if !strings.Contains(h.ops(), "clone "+h.instance(name)) {
		t.Errorf("the clone's VM was not copied:\n%s", h.ops())
	}
	h.guestRun(t, name, "echo clone > work/a.txt")
	h.guestRun(t, "api", "echo source > work/b.txt")
	if a, b := h.guestRun(t, "api", "cat work/a.txt"), h.guestRun(t, name, "ls work"); a != "original" || b != "a.txt" {
		t.Errorf("source and clone share a disk: api a.txt=%q, clone has %q", a, b)
	}
	w := h.world()
	got := w[h.instance(name)]
	if got.Status != drivers.Running || got.Reported.CPUs != 3 || len(got.Reported.Ports) != 0 ||
		w[h.instance("api")].Status != drivers.Running {
		t.Errorf("world: clone %+v", got)
	}
	r, _ := h.eng.Load(h.ws())
	if sb := r.Config.Sandboxes[name]; sb.CloneOf != "api" || !r.AdHoc[name] || r.Config.Leases[name].ExpiresAt.IsZero() {
		t.Errorf("declared %+v, lease %+v", sb, r.Config.Leases[name])
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("after the clone the plan is not empty: %+v", p.Actions)
	}
	// The clone outlives its source.
	if _, err := h.converge(Options{Targets: []string{"api"}, Intent: Destroy{Sandboxes: []string{"api"}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := h.reconcile(); err != nil || len(res.Plan.Problems) > 0 {
		t.Errorf("a pass after the source went: %v %+v", err, res.Plan.Problems)
	}
	if got := h.guestRun(t, name, "cat work/a.txt"); got != "clone" {
		t.Errorf("the clone after its source went: %q", got)
	}
	if _, n2, err := h.clone(CloneRequest{Source: name}); err != nil || n2 != "api-clone-1-clone-1" {
		t.Errorf("a clone of a clone: %q %v", n2, err)
	}
}

func TestACloneFromASnapshotHasTheSnapshotsDisk(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	h.guestRun(t, "api", "echo v1 > a.txt")
	h.mustSnapshot(t, SnapshotCreate, "api", "v1")
	h.guestRun(t, "api", "echo v2 > a.txt")
	ttl := 10 * time.Minute
	res, name, err := h.clone(CloneRequest{Source: "api", Name: "old", Snapshot: "v1", TTL: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.guestRun(t, name, "cat a.txt"); name != "old" || got != "v1" {
		t.Errorf("clone %s reads %q", name, got)
	}
	if l := res.Resolved.Config.Leases["old"]; !l.ExpiresAt.Equal(t0.Add(ttl)) {
		t.Errorf("lease %+v", l)
	}
	if list := h.mustSnapshot(t, SnapshotList, "old", "").Snapshots; len(list) != 0 {
		t.Errorf("the clone has its source's snapshots: %+v", list)
	}
}

func TestClonesAreCountedAgainstTheInstanceCap(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 1\n[sandboxes.api]\n")
	h.mustApply()
	_, name, err := h.clone(CloneRequest{Source: "api"})
	if codeOf(err) != coded.InstanceLimit {
		t.Fatalf("a clone past max_instances: %v", err)
	}
	r, _ := h.eng.Load(h.ws())
	if _, declared := r.Config.Sandboxes[name]; declared || len(h.world()) != 1 {
		t.Errorf("a refused clone left %s declared or a VM behind: %v", name, h.world())
	}
	if _, _, err := h.clone(CloneRequest{Source: "api"}); codeOf(err) != coded.InstanceLimit {
		t.Errorf("again: %v", err)
	}
}

func TestCloneRequestsTheEngineRefuses(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	long := 1000 * time.Hour
	for _, c := range []struct {
		req  CloneRequest
		code string
	}{
		{CloneRequest{Source: "ghost"}, coded.InstanceNotFound},
		{CloneRequest{Source: "api", Name: "web"}, coded.ConfigInvalid},
		{CloneRequest{Source: "api", Name: "../etc"}, coded.ConfigInvalid},
		{CloneRequest{Source: "api", Name: strings.Repeat("x", 41)}, coded.ConfigInvalid},
		{CloneRequest{Source: "api", Snapshot: "nope"}, coded.SnapshotNotFound},
		{CloneRequest{Source: "api", Snapshot: "../x"}, coded.InvalidArguments},
		{CloneRequest{Source: "api", TTL: &long}, coded.TTLInvalid},
	} {
		if _, _, err := h.clone(c.req); codeOf(err) != c.code {
			t.Errorf("%+v: %v (want %s)", c.req, err, c.code)
		}
	}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return plainDriver{Driver: d, Execer: d.(drivers.Execer)}, nil
	}
	if _, _, err := h.clone(CloneRequest{Source: "api"}); codeOf(err) != coded.SnapshotUnsupported {
		t.Errorf("a backend without clones: %v", err)
	}
	if len(h.world()) != 2 {
		t.Errorf("a refused clone changed the world: %v", h.world())
	}
}

func TestASandboxDeclaredFromASnapshotIsMadeFromIt(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\nfrom_snapshot = \"seeded\"\n")
	res, err := h.apply()
	if codeOf(err) != coded.SnapshotNotFound || len(res.Plan.Problems) != 1 || res.Plan.Problems[0].Sandbox != "web" {
		t.Fatalf("before the snapshot exists: %v", err)
	}
	h.guestRun(t, "api", "echo seed > data.txt")
	h.mustSnapshot(t, SnapshotCreate, "api", "seeded")
	h.guestRun(t, "api", "echo later > data.txt")
	if p := h.plan(); len(p.Actions) != 1 || !strings.Contains(p.Actions[0].Cause, "from snapshot api/seeded") {
		t.Errorf("plan: %+v", p.Actions)
	}
	h.mustApply()
	if got := h.guestRun(t, "web", "cat data.txt"); got != "seed" {
		t.Errorf("web reads %q", got)
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("not converged: %+v", p.Actions)
	}
}

func TestARunThatMayCopyADiskHoldsItsSource(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\nfrom_snapshot = \"api/s\"\n")
	r, _ := h.eng.Load(h.ws())
	got := admission.WithSources(r, h.state(t), []string{"web"})
	if strings.Join(got, " ") != "web api" {
		t.Errorf("locks %v", got)
	}
}
