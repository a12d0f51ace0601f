package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/state"
)

// The moment a lease runs out every row says so, before the loop has
// deleted anything: status, list_instances and exec judge alike.
func TestAStatusRowJudgesItsLeaseAtOnce(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\nttl = \"30m\"\n[sandboxes.api]\n")
	h.mustApply()
	rows := h.status(t)
	if len(rows) != 1 || rows[0].Lease != LeaseLive || rows[0].Phase != state.Running {
		t.Fatalf("after apply: %+v", rows)
	}
	h.clock.Advance(30 * time.Minute)
	rows = h.status(t)
	if rows[0].Lease != LeaseExpired || rows[0].Phase != state.Running {
		t.Errorf("at the lease's end, before the loop ran: %+v", rows[0])
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if rows = h.status(t); rows[0].Lease != LeaseEnded || rows[0].Phase != state.Expired {
		t.Errorf("after the loop's pass: %+v", rows[0])
	}
}

// An instance that went at its lease's end behind sbf's back (a cluster's controller
// deleted it while no sbf ran) is shown expired, as the next apply records it, not as a
// recorded running sandbox whose instance is missing; one that went inside its lease is
// still drift.
func TestAnInstanceGoneAtItsLeaseEndIsExpired(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\nttl = \"30m\"\n[sandboxes.api]\n")
	h.mustApply()
	os.Remove(filepath.Join(h.simDir, "instances", h.instance("api")+".json")) // the cluster deleted it
	if rows := h.status(t); rows[0].Phase != state.Running || !strings.Contains(rows[0].Drift, "missing") {
		t.Errorf("gone inside its lease: %+v", rows[0])
	}
	h.clock.Advance(30 * time.Minute)
	rows := h.status(t)
	if rows[0].Phase != state.Expired || rows[0].Drift != "" || rows[0].Lease != LeaseEnded {
		t.Errorf("gone at its lease's end: %+v; want expired, no drift", rows[0])
	}
}

func (h *harness) status(t *testing.T) []SandboxStatus {
	t.Helper()
	res, err := h.planWith(passOptions())
	if err != nil {
		t.Fatal(err)
	}
	return res.Status()
}
