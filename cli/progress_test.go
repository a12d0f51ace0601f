package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/reconcile"
)

func TestProgressHeartbeatDuringLongActions(t *testing.T) {
	var out testutil.SyncBuffer
	p := newProgress(&out, 20*time.Millisecond)
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create})
	time.Sleep(70 * time.Millisecond)
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create, Done: true, Elapsed: 70 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	text := out.String()
	beats := strings.Count(text, "api: create still running")
	if !strings.HasPrefix(text, "api: create...\n") || beats < 2 ||
		!strings.HasSuffix(text, "api: create done (70ms)\n") {
		t.Errorf("progress output:\n%s", text)
	}
	if after := strings.Count(out.String(), "still running"); after != beats {
		t.Error("heartbeats continued after the action ended")
	}
}

// A driver's message (Lima waiting for ssh) is a line of its own and
// neither restarts nor ends the action.
func TestProgressPassesDriverMessages(t *testing.T) {
	var out testutil.SyncBuffer
	p := newProgress(&out, time.Hour)
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create})
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create,
		Message: `lima: Waiting for the essential requirement 1 of 2: "ssh"`})
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create, Done: true, Elapsed: time.Second})
	want := "api: create...\napi: create: lima: Waiting for the essential requirement 1 of 2: \"ssh\"\napi: create " +
		"done (1s)\n"
	if out.String() != want {
		t.Errorf("progress output:\n%s\nwant:\n%s", out.String(), want)
	}
}
