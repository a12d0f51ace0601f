package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

func (h *harness) snapshot(op SnapshotOp, sandbox, name string) (*SnapshotResult, error) {
	return h.eng.Snapshot(context.Background(), h.ws(), SnapshotRequest{Op: op, Sandbox: sandbox, Name: name})
}

func (h *harness) mustSnapshot(t *testing.T, op SnapshotOp, sandbox, name string) *SnapshotResult {
	t.Helper()
	res, err := h.snapshot(op, sandbox, name)
	if err != nil {
		t.Fatalf("snapshot %s %s %s: %v", op, sandbox, name, err)
	}
	return res
}

func codeOf(err error) string { return coded.Of(err, "").Code }

func (h *harness) guestRun(t *testing.T, sandbox, cmd string) string {
	t.Helper()
	res, err := h.target(t, sandbox).Exec(context.Background(), execReq(cmd))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s in %s: %+v %v", cmd, sandbox, res, err)
	}
	return strings.TrimSpace(res.Stdout)
}

func (h *harness) state(t *testing.T) *state.File {
	t.Helper()
	_, id, _ := spec.WorkspaceIdentity(h.root)
	f, err := state.Read(filepath.Join(h.root, spec.Dir), h.root, id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSnapshotChangeRestoreGivesTheFileBack(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	h.guestRun(t, "api", "mkdir -p work && echo before > work/a.txt")
	created := h.mustSnapshot(t, SnapshotCreate, "api", "clean")
	s := created.Snapshot
	if s.Name != "clean" || s.Sandbox != "api" || s.Driver != "sim" || !s.CreatedAt.Equal(t0) || s.SizeBytes == 0 ||
		s.Instance != h.instance("api") {
		t.Fatalf("created %+v", s)
	}
	if recs := h.state(t).Snapshots; len(recs) != 1 || *recs[0] != *s {
		t.Errorf("state records %+v", recs)
	}
	h.guestRun(t, "api", "echo after > work/a.txt; touch work/new.txt")
	h.clock.Advance(time.Minute)
	h.mustSnapshot(t, SnapshotRestore, "api", "clean")
	if got := h.guestRun(t, "api", "cat work/a.txt; ls work"); got != "before\na.txt" {
		t.Errorf("after restore: %q", got)
	}
	list := h.mustSnapshot(t, SnapshotList, "api", "").Snapshots
	if len(list) != 1 || !list[0].CreatedAt.Equal(t0) {
		t.Errorf("list: %+v", list)
	}
	h.mustSnapshot(t, SnapshotDelete, "api", "clean")
	if recs := h.state(t).Snapshots; len(recs) != 0 {
		t.Errorf("a deleted snapshot is still recorded: %+v", recs)
	}
	if list := h.mustSnapshot(t, SnapshotList, "api", "").Snapshots; list == nil || len(list) != 0 {
		t.Errorf("list after delete: %#v", list)
	}
}

func TestSnapshotRequestsTheEngineRefuses(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	h.mustSnapshot(t, SnapshotCreate, "api", "s0")
	for _, c := range []struct {
		op            SnapshotOp
		sandbox, name string
		code          string
	}{
		{SnapshotCreate, "api", "s0", coded.SnapshotExists},
		{SnapshotCreate, "api", "../x", coded.InvalidArguments},
		{SnapshotCreate, "api", "-rf", coded.InvalidArguments},
		{SnapshotRestore, "api", "nope", coded.SnapshotNotFound},
		{SnapshotDelete, "web", "s0", coded.SnapshotNotFound}, // snapshots are each sandbox's own
		{SnapshotCreate, "ghost", "s1", coded.InstanceNotFound},
		{"explode", "api", "s1", coded.InvalidArguments},
	} {
		if _, err := h.snapshot(c.op, c.sandbox, c.name); codeOf(err) != c.code {
			t.Errorf("%s %s %s: %v (want %s)", c.op, c.sandbox, c.name, err, c.code)
		}
	}
	for i := 1; i < MaxSnapshots; i++ {
		h.mustSnapshot(t, SnapshotCreate, "api", "s"+string(rune('a'+i)))
	}
	_, err := h.snapshot(SnapshotCreate, "api", "one-too-many")
	if ce := coded.Of(err, ""); ce.Code != coded.SnapshotLimit || ce.Details["max_snapshots"] != MaxSnapshots {
		t.Errorf("past the limit: %v", err)
	}
}

func TestSnapshotsGoWithTheirSandbox(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	h.mustSnapshot(t, SnapshotCreate, "api", "a1")
	h.mustSnapshot(t, SnapshotCreate, "web", "w1")
	if _, err := h.converge(Options{Targets: []string{"api"}, Intent: Destroy{Sandboxes: []string{"api"}}}); err != nil {
		t.Fatal(err)
	}
	recs := h.state(t).Snapshots
	if len(recs) != 1 || recs[0].Sandbox != "web" {
		t.Errorf("after destroying api: %+v", recs)
	}
	if _, err := os.Stat(filepath.Join(h.simDir, "snapshots", h.instance("api"))); !os.IsNotExist(err) {
		t.Errorf("api's snapshots outlived its VM: %v", err)
	}
	if _, err := h.snapshot(SnapshotList, "api", ""); codeOf(err) != coded.InstanceTerminal {
		t.Errorf("snapshots of a destroyed sandbox: %v", err)
	}
	// web's lease runs out: the loop's expiry takes its snapshots too.
	h.clock.Advance(24 * time.Hour)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if recs := h.state(t).Snapshots; len(recs) != 0 {
		t.Errorf("after expiry: %+v", recs)
	}
}

// plainDriver is a backend with the lifecycle and commands only.
type plainDriver struct {
	Driver
	drivers.Execer
}

func TestABackendWithoutSnapshotsRefusesWithNextSteps(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return plainDriver{Driver: d, Execer: d.(drivers.Execer)}, nil
	}
	for _, op := range []SnapshotOp{SnapshotCreate, SnapshotList} {
		_, err := h.snapshot(op, "api", "s")
		ce := coded.Of(err, "")
		if steps, _ := ce.Details["next_steps"].([]string); ce.Code != coded.SnapshotUnsupported || len(steps) == 0 {
			t.Errorf("%s: %+v", op, ce)
		}
	}
}
