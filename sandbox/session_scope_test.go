package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

// A session belongs to the workspace it was started in: a caller whose
// scope leaves that workspace out reads, writes, signals and closes
// nothing, and is told what an id that never existed is told, whether the
// session runs or has ended; its command got none of the input.
func TestSessionOfAnotherWorkspaceIsUnknown(t *testing.T) {
	ss, tgt, _ := newSessions(t)
	ctx := context.Background()
	s, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := func(root string) bool { return root != tgt.Resolved.Root }
	unknown := func(id string) string {
		_, err := ss.Read(ctx, anywhere, id, 0, 0, 0)
		return strings.ReplaceAll(err.Error(), id, "ID")
	}
	never := unknown("sess_000000000000")
	check := func(what string, err error) {
		t.Helper()
		if !hasCode(err, sandbox.CodeSessionNotFound) || strings.ReplaceAll(err.Error(), s.ID, "ID") != never {
			t.Errorf("%s of another workspace's session: %v; want %q", what, err, never)
		}
	}
	_, err = ss.Write(elsewhere, s.ID, []byte("from elsewhere\n"), true)
	check("write", err)
	_, _, err = ss.Signal(elsewhere, s.ID, drivers.Signal("KILL"))
	check("signal", err)
	_, err = ss.Read(ctx, elsewhere, s.ID, 0, 0, 0)
	check("read", err)
	_, err = ss.Close(elsewhere, s.ID)
	check("close", err)
	_, err = ss.Read(ctx, nil, s.ID, 0, 0, 0)
	check("read without a scope", err)
	if _, err := ss.Write(anywhere, s.ID, []byte("mine\n"), true); err != nil {
		t.Fatalf("the owner's write: %v", err)
	}
	got, _, _ := readUntil(t, ss, s.ID, 0, "\x00")
	if got["stdout"] != "mine\n" {
		t.Errorf("the command read %q; want only its owner's input", got["stdout"])
	}
	if _, err := ss.Close(anywhere, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = ss.Read(ctx, elsewhere, s.ID, 0, 0, 0)
	check("read after it ended", err)
	if _, err := ss.Read(ctx, anywhere, s.ID, 0, 0, 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("the owner is told why it ended: %v", err)
	}
}

// Max caps each workspace's sessions, so one workspace's caller cannot
// take every place; Total caps the server's, and its refusal says nothing
// of other workspaces' sessions.
func TestSessionCapIsPerWorkspace(t *testing.T) {
	ss, a, _ := newSessions(t) // Max 2
	b := sandboxtest.New(t, "[sandboxes.dev]\n", "dev").Target()
	ss.Total = 3
	ctx := context.Background()
	start := func(tgt *sandbox.Target) error {
		_, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Argv: []string{"cat"}})
		return err
	}
	for range 2 {
		if err := start(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := start(a); !hasCode(err, sandbox.CodeSessionLimit) || !strings.Contains(err.Error(), "workspace") {
		t.Fatalf("a third session of one workspace: %v", err)
	}
	if err := start(b); err != nil {
		t.Fatalf("another workspace's first session, its own full: %v", err)
	}
	err := start(b)
	if !hasCode(err, sandbox.CodeSessionLimit) || strings.Contains(err.Error(), "2 ") {
		t.Fatalf("past the server's total: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(ss.List()) != 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions open; want 3", len(ss.List()))
		}
	}
}
