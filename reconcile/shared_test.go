package reconcile

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
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
		Intent: Destroy{Sandboxes: []string{"api"}}}); err != nil {
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

// A refused create is in the history, where the engine decided it,
// whichever door asked.
func TestARefusedCreateIsInTheHistory(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 1\n[sandboxes.api]\n")
	h.eng.HostDir = filepath.Join(h.root, "host")
	h.mustApply()
	_, err := h.eng.Apply(context.Background(), h.ws(), Options{Targets: []string{"web"},
		Intent: Up{Sandboxes: []string{"web"}}, Audit: &Audit{Door: "mcp", Tool: "create_instance"}})
	if coded.Of(err, "").Code != coded.InstanceLimit {
		t.Fatalf("a create past the cap: %v", err)
	}
	events, err := sandbox.WorkspaceHistory(h.root).Read(func(sandbox.Event) bool { return true }, 0)
	if err != nil || len(events) != 1 || events[0].Tool != "create_instance" || events[0].Sandbox != "web" ||
		events[0].ErrorCode != coded.InstanceLimit {
		t.Errorf("history after the refusal: %+v %v", events, err)
	}
}

// A create refused before anything was made leaves nothing behind: no
// record kept for days, no host index entry, no declaration, whether the
// ledger refused it before any lock (a count a moment ago) or a full count
// under the host's lock did.
func TestARefusedCreateLeavesNoRecord(t *testing.T) {
	for _, counted := range []string{"a moment ago", "long ago"} {
		h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 1\n[sandboxes.api]\n")
		h.eng.HostDir = filepath.Join(h.root, "host")
		h.mustApply()
		if counted == "long ago" {
			h.clock.Advance(time.Minute)
		}
		_, err := h.eng.Apply(context.Background(), h.ws(), Options{Targets: []string{"web"},
			Intent: Up{Sandboxes: []string{"web"}}})
		if coded.Of(err, "").Code != coded.InstanceLimit {
			t.Fatalf("counted %s: a create past the cap: %v", counted, err)
		}
		_, id, _ := spec.WorkspaceIdentity(h.root)
		rec, err := state.Read(filepath.Join(h.root, spec.Dir), h.root, id)
		if err != nil || rec.Sandboxes["web"] != nil {
			t.Errorf("counted %s: the refused sandbox is recorded: %+v %v", counted, rec.Sandboxes["web"], err)
		}
		if e, ok := h.eng.index().Lookup("web"); ok {
			t.Errorf("counted %s: the refused sandbox is in the host index: %+v", counted, e)
		}
		if r, _ := h.eng.Load(h.ws()); r.AdHoc["web"] {
			t.Errorf("counted %s: the refused sandbox is still declared", counted)
		}
	}
}

// The loop watches every workspace holding a lease, spec file or not (a
// create_instance in a folder without one), and none whose folder is gone.
func TestLeasedWorkspacesAreWhatTheLoopsWatch(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n")
	h.eng.HostDir = filepath.Join(h.root, "host")
	exp := t0.Add(time.Hour)
	specless, gone := t.TempDir(), filepath.Join(t.TempDir(), "gone")
	for _, e := range []state.IndexEntry{
		{Instance: "sbf-1-a", Sandbox: "a", WorkspaceRoot: h.root, ExpiresAt: exp},
		{Instance: "sbf-2-b", Sandbox: "b", WorkspaceRoot: specless, ExpiresAt: exp},
		{Instance: "sbf-3-c", Sandbox: "c", WorkspaceRoot: gone, ExpiresAt: exp},
		{Instance: "sbf-4-d", Sandbox: "d", WorkspaceRoot: t.TempDir()}, // no lease
	} {
		if err := h.eng.index().Put(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	got := h.eng.LeasedWorkspaces()
	want := []string{h.root, specless}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("LeasedWorkspaces = %v, want %v", got, want)
	}
}

// A request none of whose sandboxes can be converged now (the backend
// cannot list its instances) takes no lease: nothing is recorded for VMs
// nobody can make.
func TestABlockedRequestTakesNoLease(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n")
	h.faults = "list:*=fail"
	_, err := h.converge(Options{Targets: []string{"web"}, Intent: Up{Sandboxes: []string{"web"}}})
	if err == nil {
		t.Fatal("an up the backend cannot serve succeeded")
	}
	if r, _ := h.eng.Load(h.ws()); len(r.Config.Leases) != 0 || r.AdHoc["web"] {
		t.Errorf("a lease or a declaration was written: leases %v, ad hoc %v", r.Config.Leases, r.AdHoc)
	}
}

// A loop over leased workspaces passes over one whose lease another
// process took after it started, without waiting for its interval, and
// over a door's own workspace once, however both name it.
func TestALoopOverLeasesWakesForALeaseTakenLater(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	other := t.TempDir()
	passed := make(chan string, 16)
	o := WatchOptions{Interval: time.Hour, Workspaces: func() []spec.Options { return []spec.Options{h.ws()} },
		Leased: func(root string) (spec.Options, bool) { return spec.Options{Root: root, Host: h.ws().Host}, true },
		Report: func(ws spec.Options, _ *Result, _ error) { passed <- ws.Root }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.eng.Watch(ctx, o) }()
	defer func() { cancel(); <-done }()
	if root := <-passed; root != h.root {
		t.Fatalf("the first pass was over %s, want %s", root, h.root)
	}
	if err := h.eng.index().Put(t.Context(), state.IndexEntry{Instance: "sbf-2-b", Sandbox: "b", WorkspaceRoot: other,
		ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.After(20 * time.Second); ; {
		select {
		case root := <-passed:
			if root == other {
				if got := h.eng.Watched(o); len(got) != 2 {
					t.Errorf("the loop watches %d workspaces, want 2: %v", len(got), got)
				}
				return
			}
		case <-deadline:
			t.Fatal("no pass over the workspace whose lease was taken after the loop started")
		}
	}
}

// A lifecycle line in the history says when the run began and how long it
// took, as a command's line does.
func TestALifecycleLineSaysHowLongTheRunTook(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	begun := h.clock.Now()
	confirm := func(*plan.Plan) (bool, error) { h.clock.Advance(1500 * time.Millisecond); return true, nil }
	if _, err := h.eng.Apply(context.Background(), h.ws(), Options{Intent: Up{Sandboxes: []string{"api"}},
		Confirm: confirm, Audit: &Audit{Door: "cli", Tool: "up"}}); err != nil {
		t.Fatal(err)
	}
	events, err := sandbox.WorkspaceHistory(h.root).Read(func(sandbox.Event) bool { return true }, 0)
	if err != nil || len(events) != 1 || events[0].DurationMS != 1500 || !events[0].Time.Equal(begun) {
		t.Errorf("the up's history line: %+v %v (want it begun at %s, 1500 ms long)", events, err, begun)
	}
}

// A create past the host's cap is refused at once, even while another
// process holds the host's admission lock (a full count of a slow backend
// in flight): the ledger's count, taken a moment ago, answers before any
// lock is waited for.
func TestACreatePastTheCapFailsFast(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 1\n[sandboxes.api]\n")
	h.eng.HostDir = filepath.Join(h.root, "host")
	h.eng.LockTimeout = time.Hour
	h.mustApply()
	up := func(ctx context.Context, name string) error {
		_, err := h.eng.Apply(ctx, h.ws(), Options{Intent: Up{Sandboxes: []string{name}}})
		return err
	}
	if err := up(context.Background(), "web"); coded.Of(err, "").Code != coded.InstanceLimit {
		t.Fatalf("a create past the cap: %v", err)
	}
	held, err := flock.Acquire(context.Background(), ownfile.At(h.eng.HostDir).File("admission.lock"),
		flock.Holder{Command: "a count in flight"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := up(ctx, "db"); coded.Of(err, "").Code != coded.InstanceLimit {
		t.Errorf("a create past the cap while another process counts: %v (want %s at once)", err,
			coded.InstanceLimit)
	}
}
