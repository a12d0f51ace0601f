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
	beats := func() int { return strings.Count(out.String(), "api: create still running") }
	for deadline := time.Now().Add(10 * time.Second); beats() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no two heartbeats in 10 s:\n%s", out.String())
		}
	}
	p.event(reconcile.Event{Sandbox: "api", Kind: plan.Create, Done: true, Elapsed: 70 * time.Millisecond})
	ended := beats()
	time.Sleep(100 * time.Millisecond) // five intervals
	text := out.String()
	if !strings.HasPrefix(text, "api: create...\n") || !strings.HasSuffix(text, "api: create done (70ms)\n") {
		t.Errorf("progress output:\n%s", text)
	}
	if beats() != ended {
		t.Errorf("heartbeats continued after the action ended:\n%s", text)
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
