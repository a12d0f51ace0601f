package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// departing is the sim with a backend's account of instances that went without sbf.
type departing struct {
	*sim.Driver
	mu    *sync.Mutex
	seen  map[string]drivers.Departure
	asked *[][]string
}

func (d departing) Departures(_ context.Context, names []string) ([]drivers.Departure, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	*d.asked = append(*d.asked, slices.Clone(names))
	var out []drivers.Departure
	for _, dep := range d.seen {
		out = append(out, dep) // what was not asked about too: the engine keeps only what it asked
	}
	return out, nil
}

// withDepartures makes the harness's sim report seen, and records what the engine asks.
func withDepartures(h *harness, seen ...drivers.Departure) *[][]string {
	asked := &[][]string{}
	byName := map[string]drivers.Departure{}
	for _, d := range seen {
		byName[d.Instance] = d
	}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return departing{Driver: d.(*sim.Driver), mu: &sync.Mutex{}, seen: byName, asked: asked}, nil
	}
	return asked
}

func clusterLines(t *testing.T, h *harness) []sandbox.Event {
	t.Helper()
	events, err := sandbox.WorkspaceHistory(h.root).Read(func(e sandbox.Event) bool { return e.Door == "cluster" }, 0)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// A backend that saw the instance expire (a cluster's controller, on its clock) makes the
// sandbox expired in status though this host's lease is live, with one history line for
// however many runs see it; the engine asks only about recorded instances it no longer
// finds, and keeps only what it asked about.
func TestABackendsExpiryIsAnExpiryRecordedOnce(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\nttl = \"30m\"\n[sandboxes.api]\n")
	at := t0.Add(5 * time.Minute)
	inst := h.instance("api")
	asked := withDepartures(h,
		drivers.Departure{Instance: inst, Reason: "LeaseExpired", Expired: true, By: "ctl (replica a)", At: at},
		drivers.Departure{Instance: "sbf-00000000-other", Reason: "LeaseExpired", Expired: true, At: at})
	h.mustApply()
	h.clock.Advance(6 * time.Minute)
	if h.status(t); len(*asked) != 0 {
		t.Fatalf("asked about %v while every instance is there", *asked)
	}
	os.Remove(filepath.Join(h.simDir, "instances", inst+".json")) // the cluster deleted it
	for range 2 {
		row := h.status(t)[0]
		if row.Phase != state.Expired || row.Drift != "" || row.Departed == nil || !row.Departed.At.Equal(at) {
			t.Fatalf("status: %+v; want expired as the backend saw it", row)
		}
	}
	if len(*asked) != 2 || !slices.Equal((*asked)[0], []string{inst}) {
		t.Errorf("asked %v; want [%s] once per look", *asked, inst)
	}
	lines := clusterLines(t, h)
	if len(lines) != 1 || lines[0].Tool != "expire" || !lines[0].Time.Equal(at) || lines[0].Sandbox != "api" ||
		!strings.Contains(lines[0].Detail, "LeaseExpired by ctl (replica a)") {
		t.Fatalf("history: %+v; want one expiry of api", lines)
	}
	h.mustApply() // the lease is live here: the sandbox is made anew
	if lines := clusterLines(t, h); len(lines) != 1 {
		t.Errorf("after an apply: %d cluster lines", len(lines))
	}
}

// What went before the recorded instance was made is an earlier VM's of the same name: it
// says nothing of this one. A removal that was not the lease's is drift, with its cause.
func TestABackendsDepartureIsJudgedByTheEngine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dep   drivers.Departure
		phase state.Phase
		drift string
	}{
		{"before the instance was made", drivers.Departure{Reason: "LeaseExpired", Expired: true, At: t0.Add(-time.Minute)},
			state.Running, "the instance is missing"},
		{"not its lease", drivers.Departure{Reason: "OverOwnerCeiling", By: "ctl", At: t0.Add(time.Minute)},
			state.Running, "missing: deleted by ctl at 2026-11-25T12:01:00Z (OverOwnerCeiling)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "[vm]\ndriver = \"sim\"\nttl = \"30m\"\n[sandboxes.api]\n")
			tc.dep.Instance = h.instance("api")
			withDepartures(h, tc.dep)
			h.mustApply()
			h.clock.Advance(2 * time.Minute)
			os.Remove(filepath.Join(h.simDir, "instances", tc.dep.Instance+".json"))
			row := h.status(t)[0]
			if row.Phase != tc.phase || !strings.Contains(row.Drift, tc.drift) {
				t.Errorf("status: %+v; want %s, drift %q", row, tc.phase, tc.drift)
			}
			if lines := clusterLines(t, h); tc.phase == state.Running && tc.dep.Expired && len(lines) != 0 {
				t.Errorf("an earlier VM's expiry reached the history: %+v", lines)
			}
		})
	}
}
