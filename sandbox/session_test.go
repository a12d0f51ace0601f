package sandbox_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

// readUntil reads a session from cursor until its output holds want (or
// it is done), and returns the output read per stream and the cursor.
func readUntil(t *testing.T, ss *sandbox.Sessions, id string, cursor int64, want ...string) (map[string]string,
	int64, sandbox.SessionOutput) {
	t.Helper()
	got := map[string]string{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := ss.Read(context.Background(), anywhere, id, cursor, 7, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if out.Cursor != cursor || out.Missed != 0 {
			t.Fatalf("read from %d: %+v", cursor, out)
		}
		for _, e := range out.Events {
			if e.Offset != cursor {
				t.Fatalf("event at %d, cursor %d", e.Offset, cursor)
			}
			got[e.Stream] += string(e.Data)
			cursor += int64(len(e.Data))
		}
		if cursor != out.NextCursor {
			t.Fatalf("next cursor %d, events end at %d", out.NextCursor, cursor)
		}
		all := true
		for _, w := range want {
			all = all && strings.Contains(got["stdout"]+got["stderr"]+got["output"], w)
		}
		if all || out.Done {
			return got, cursor, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %v", want, got)
		}
	}
}

func newSessions(t *testing.T) (*sandbox.Sessions, *sandbox.Target, *sandboxtest.Sandbox) {
	sb := sandboxtest.New(t, "[sandboxes.dev]\n", "dev")
	ss := &sandbox.Sessions{Clock: sb.Clock, Idle: time.Minute, Max: 2}
	t.Cleanup(func() {
		for _, s := range ss.List() {
			ss.Close(anywhere, s.ID)
		}
	})
	return ss, sb.Target(), sb
}

// A shell reading commands from its stdin is written to and read from
// with a cursor, in small reads, losing and repeating nothing; closing its
// stdin ends it.
func TestSessionShellCursor(t *testing.T) {
	ss, tgt, _ := newSessions(t)
	s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{Argv: []string{"sh"},
		Env: map[string]string{"GREETING": "hi there"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Write(anywhere, s.ID, []byte("echo \"$GREETING\"; echo oops >&2\n"), false); err != nil {
		t.Fatal(err)
	}
	got, cursor, _ := readUntil(t, ss, s.ID, 0, "oops\n", "hi there\n")
	if got["stdout"] != "hi there\n" || got["stderr"] != "oops\n" {
		t.Fatalf("first read: %q", got)
	}
	ss.Write(anywhere, s.ID, []byte("i=0; while [ $i -lt 200 ]; do echo line$i; i=$((i+1)); done\n"), false)
	got, cursor, _ = readUntil(t, ss, s.ID, cursor, "line199\n")
	var want strings.Builder
	for i := range 200 {
		want.WriteString("line" + itoa(i) + "\n")
	}
	if got["stdout"] != want.String() {
		t.Fatalf("lines: %q", got["stdout"])
	}
	if _, err := ss.Write(anywhere, s.ID, []byte("exit 3\n"), true); err != nil {
		t.Fatal(err)
	}
	_, _, out := readUntil(t, ss, s.ID, cursor, "\x00")
	if !out.Done || out.Exit == nil || out.Exit.Code != 3 || out.Status != "exited" {
		t.Fatalf("after exit: %+v", out)
	}
	if _, err := ss.Write(anywhere, s.ID, []byte("more"), false); !hasCode(err, sandbox.CodeSessionEnded) {
		t.Fatalf("write after exit: %v", err)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// anywhere is the scope of a caller that may use every workspace.
func anywhere(string) bool { return true }

func hasCode(err error, code string) bool {
	var c *coded.Error
	return errors.As(err, &c) && c.Code == code
}

// A signal reaches the command; a full table refuses another session with
// a coded error; closing frees its place.
func TestSessionSignalAndCap(t *testing.T) {
	ss, tgt, _ := newSessions(t)
	ctx := context.Background()
	a, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Command: "echo ready; exec sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Argv: []string{"cat"}}); !hasCode(err,
		sandbox.CodeSessionLimit) {
		t.Fatalf("third session: %v", err)
	}
	readUntil(t, ss, a.ID, 0, "ready\n")
	if _, _, err := ss.Signal(anywhere, a.ID, "BOGUS"); !hasCode(err, coded.InvalidArguments) {
		t.Fatalf("bad signal: %v", err)
	}
	if _, _, err := ss.Signal(anywhere, a.ID, "TERM"); err != nil {
		t.Fatal(err)
	}
	_, _, out := readUntil(t, ss, a.ID, 6, "\x00")
	if out.Exit == nil || out.Exit.Code != 128+15 {
		t.Fatalf("after TERM: %+v", out.Exit)
	}
	closed, err := ss.Close(anywhere, b.ID)
	if err != nil || closed.Status != "ended" || closed.Exit.Reason != sandbox.EndClosed {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if _, err := ss.Read(ctx, anywhere, b.ID, 0, 0, 0); !hasCode(err, sandbox.CodeSessionNotFound) {
		t.Fatalf("read after close: %v", err)
	}
	if _, err := ss.Start(ctx, tgt, sandbox.SessionRequest{Argv: []string{"cat"}}); err != nil {
		t.Fatalf("a closed session's place: %v", err)
	}
}

// A session nobody calls ends after the idle time; its command with it.
func TestSessionIdle(t *testing.T) {
	ss, tgt, sb := newSessions(t)
	s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		sb.Clock.Advance(15 * time.Second)
		_, err := ss.Read(context.Background(), anywhere, s.ID, 0, 0, 0)
		if hasCode(err, sandbox.CodeSessionNotFound) {
			if !strings.Contains(err.Error(), "idle") {
				t.Fatalf("why: %v", err)
			}
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("idle session still there: %v", err)
		}
		// Reading is a use: let the clock pass the idle time without one.
		sb.Clock.Advance(2 * time.Minute)
		time.Sleep(10 * time.Millisecond)
	}
}

// Output beyond the ceiling drops the oldest, and a reader behind is told
// how much it missed; memory stays at the ceiling.
func TestSessionOutputBound(t *testing.T) {
	ss, tgt, _ := newSessions(t)
	tgt.MaxOutput = 4096
	s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{
		Command: "head -c 100000 /dev/zero | tr '\\0' x; echo END"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if i := ss.List()[0]; i.Exit != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not end")
		}
	}
	out, err := ss.Read(context.Background(), anywhere, s.ID, 0, sandbox.MaxSessionRead, 0)
	if err != nil || !out.Done {
		t.Fatalf("%v %+v", err, out.SessionInfo)
	}
	held := out.NextCursor - out.Cursor - out.Missed
	if out.OutputBytes != 100004 || out.Missed == 0 || held > 4096 || out.DroppedBytes != out.Missed ||
		out.NextCursor != 100004 {
		t.Fatalf("bounded output: held %d, %+v", held, out.SessionInfo)
	}
	last := out.Events[len(out.Events)-1]
	if !strings.HasSuffix(string(last.Data), "xEND\n") {
		t.Fatalf("the newest output is kept: %q", last.Data)
	}
}

// On a terminal, input is echoed into the one output stream, and INT is
// typed as Ctrl-C: the shell survives it and takes the next line.
func TestSessionTerminal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sim has no terminal on Windows")
	}
	ss, tgt, _ := newSessions(t)
	s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{Argv: []string{"sh"}, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	ss.Write(anywhere, s.ID, []byte("echo $((6*7))\n"), false)
	_, cursor, _ := readUntil(t, ss, s.ID, 0, "42\r\n")
	ss.Write(anywhere, s.ID, []byte("echo start-$((2+3)); sleep 300\n"), false)
	_, cursor, _ = readUntil(t, ss, s.ID, cursor, "start-5\r\n")
	time.Sleep(200 * time.Millisecond) // the shell starts sleep in the foreground; Ctrl-C before would go to it
	if _, how, err := ss.Signal(anywhere, s.ID, "INT"); err != nil || how != "typed" {
		t.Fatalf("INT on a terminal: %q %v", how, err)
	}
	ss.Write(anywhere, s.ID, []byte("echo after-$((1+1))\n"), false)
	readUntil(t, ss, s.ID, cursor, "after-2\r\n")
	if _, how, err := ss.Signal(anywhere, s.ID, "KILL"); err != nil || how != "ended" {
		t.Fatalf("KILL on a terminal: %q %v", how, err)
	}
	_, _, out := readUntil(t, ss, s.ID, cursor, "\x00")
	if out.Status != "ended" || out.Exit.Reason != "signal KILL" {
		t.Fatalf("after KILL: %+v", out.SessionInfo)
	}
}

// A session ends when its sandbox does (a lease ended, a VM destroyed
// from another door): the sweep asks Alive.
func TestSessionEndsWithItsSandbox(t *testing.T) {
	ss, tgt, sb := newSessions(t)
	var gone atomic.Bool
	s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{Argv: []string{"cat"},
		Alive: func(context.Context) error {
			if gone.Load() {
				return errors.New("sandbox dev is expired")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	gone.Store(true)
	for deadline := time.Now().Add(20 * time.Second); len(ss.List()) > 0; time.Sleep(10 * time.Millisecond) {
		sb.Clock.Advance(16 * time.Second)
		if time.Now().After(deadline) {
			t.Fatal("the session outlived its sandbox")
		}
	}
	_, err = ss.Read(context.Background(), anywhere, s.ID, 0, 0, 0)
	if !hasCode(err, sandbox.CodeSessionNotFound) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("after the sandbox ended: %v", err)
	}
}

// A server that stops ends every session's command with it, all at once:
// a session lives in the server's memory only.
func TestEndAllEndsEverySessionsCommand(t *testing.T) {
	ss, tgt, _ := newSessions(t)
	var ids []string
	for range 2 {
		s, err := ss.Start(context.Background(), tgt, sandbox.SessionRequest{Command: "sleep 60"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	start := time.Now()
	ss.EndAll("the server stopped")
	if n := len(ss.List()); n != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("%d sessions left after EndAll (took %s)", n, time.Since(start))
	}
	for _, id := range ids {
		if _, err := ss.Read(context.Background(), anywhere, id, 0, 0, 0); !hasCode(err, sandbox.CodeSessionNotFound) ||
			!strings.Contains(err.Error(), "the server stopped") {
			t.Errorf("session %s after EndAll: %v", id, err)
		}
	}
}
