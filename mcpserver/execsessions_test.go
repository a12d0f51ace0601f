package mcpserver

import (
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
)

// sessionReader reads one session through read_session, checking that
// each read starts where the last ended.
type sessionReader struct {
	f      *fixture
	id     string
	cursor float64
	text   map[string]string
	last   map[string]any
}

func (f *fixture) startSession(args map[string]any) *sessionReader {
	f.t.Helper()
	out := f.ok("start_session", args)
	if out["status"] != "running" || !strings.HasPrefix(out["session_id"].(string), "sess_") {
		f.t.Fatalf("start_session: %v", out)
	}
	srv := f.srv
	f.t.Cleanup(func() {
		for _, s := range srv.execSessions.List() {
			srv.execSessions.Close(anyWorkspace, s.ID)
		}
	})
	return &sessionReader{f: f, id: out["session_id"].(string), text: map[string]string{}}
}

// until reads (in small pieces) until every want was printed or the
// command is done.
func (r *sessionReader) until(want ...string) map[string]any {
	r.f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := r.f.ok("read_session", map[string]any{"session_id": r.id, "cursor": r.cursor, "max_bytes": 5})
		if out["cursor"] != r.cursor || out["dropped_bytes"] != 0.0 {
			r.f.t.Fatalf("read from %v: %v", r.cursor, out)
		}
		for _, e := range out["events"].([]any) {
			ev := e.(map[string]any)
			if ev["offset"] != r.cursor {
				r.f.t.Fatalf("event at %v after cursor %v", ev["offset"], r.cursor)
			}
			data := ev["text"].(string)
			r.text[ev["stream"].(string)] += data
			r.cursor += float64(len(data))
		}
		if out["next_cursor"] != r.cursor {
			r.f.t.Fatalf("next_cursor %v, events end at %v", out["next_cursor"], r.cursor)
		}
		r.last = out
		all := true
		for _, w := range want {
			all = all && strings.Contains(r.text["stdout"]+r.text["stderr"]+r.text["output"], w)
		}
		if all || out["done"] == true {
			return out
		}
		if time.Now().After(deadline) {
			r.f.t.Fatalf("no %q in %q", want, r.text)
		}
		if len(out["events"].([]any)) == 0 {
			time.Sleep(5 * time.Millisecond) // the fake clock never ends a wait_ms
		}
	}
}

func (r *sessionReader) write(data string) map[string]any {
	r.f.t.Helper()
	return r.f.ok("write_session", map[string]any{"session_id": r.id, "data": data})
}

// An agent drives an interactive shell over several calls: it writes
// commands, reads their output with a cursor (in 5-byte reads: nothing lost,
// nothing twice, é whole), signals a command and closes the session.
func TestExecSessionShell(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	r := f.startSession(map[string]any{"instance_id": id, "command": "sh -i", "env": map[string]any{"WHO": "é-agent"}})
	r.write("echo \"hello $WHO\"\n")
	r.until("hello é-agent\n")
	r.write("echo to-stderr >&2\n")
	r.until("to-stderr\n")
	if !strings.Contains(r.text["stderr"], "to-stderr") || strings.Contains(r.text["stdout"], "to-stderr") {
		t.Fatalf("streams: %q", r.text)
	}
	// Binary input; a read waiting for output is woken by it (the fake
	// clock would never end its wait).
	f.ok("write_session", map[string]any{"session_id": r.id,
		"data_base64": base64.StdEncoding.EncodeToString([]byte("sleep 0.2; echo woken\n"))})
	woke := f.ok("read_session", map[string]any{"session_id": r.id, "cursor": r.cursor, "wait_ms": 30000})
	if len(woke["events"].([]any)) == 0 {
		t.Fatalf("read with wait_ms: %v", woke)
	}
	r.until("woken\n")
	f.fails("signal_session", map[string]any{"session_id": r.id, "signal": "STOP"}, "INVALID_ARGUMENTS")
	f.fails("write_session", map[string]any{"session_id": r.id}, "INVALID_ARGUMENTS")
	f.fails("read_session", map[string]any{"session_id": r.id, "cursor": 1e9}, "INVALID_ARGUMENTS")
	f.ok("write_session", map[string]any{"session_id": r.id, "data": "exit 7\n", "close_stdin": true})
	out := r.until("\x00")
	exit, _ := out["exit"].(map[string]any)
	if out["done"] != true || out["status"] != "exited" || exit["exit_code"] != 7.0 {
		t.Fatalf("after exit: %v", out)
	}
	c := f.ok("close_session", map[string]any{"session_id": r.id})
	if c["closed"] != true {
		t.Fatalf("close_session: %v", c)
	}
	gone := f.fails("read_session", map[string]any{"session_id": r.id}, "SESSION_NOT_FOUND")
	if !strings.Contains(gone["message"].(string), "closed") {
		t.Errorf("why it is gone: %v", gone)
	}
	// A signal reaches every process of the command.
	r = f.startSession(map[string]any{"instance_id": id,
		"command": "trap 'echo caught; exit 9' INT; echo armed; while :; do sleep 0.1; done"})
	r.until("armed\n")
	if s := f.ok("signal_session", map[string]any{"session_id": r.id, "signal": "INT"}); s["delivered"] != "signal" {
		t.Fatalf("signal_session: %v", s)
	}
	out = r.until("\x00")
	if r.text["stdout"] != "armed\ncaught\n" || out["exit"].(map[string]any)["exit_code"] != 9.0 {
		t.Fatalf("after INT: %q %v", r.text, out)
	}
}

// The done-when: python3 -i is written to and read from with a
// cursor, and closed.
func TestExecSessionPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here")
	}
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	r := f.startSession(map[string]any{"instance_id": id, "argv": []any{"python3", "-i", "-q", "-u"}})
	r.write("x = 6 * 7\n")
	r.write("print(x, 'é')\n")
	r.until("42 é\n")
	r.write("import sys; sys.stderr.write('err-line\\n')\n")
	r.until("err-line\n")
	if c := f.ok("close_session", map[string]any{"session_id": r.id}); c["status"] != "ended" {
		t.Fatalf("close_session: %v", c)
	}
}

// Sessions end after the operator's idle time, and with their sandbox;
// a full table refuses another one with a coded error saying what to do.
func TestExecSessionLimitsAndEnds(t *testing.T) {
	f := newFixture(t, simSpec)
	f.start(Settings{SweepInterval: time.Minute, Session: "local", MaxExecSessions: 2,
		ExecSessionIdle: time.Minute})
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	a := f.startSession(map[string]any{"instance_id": id, "argv": []any{"cat"}})
	b := f.startSession(map[string]any{"instance_id": id, "argv": []any{"cat"}})
	full := f.fails("start_session", map[string]any{"instance_id": id, "argv": []any{"cat"}}, "SESSION_LIMIT_EXCEEDED")
	if !strings.Contains(full["message"].(string), "close_session") || full["details"].(map[string]any)["max_sessions"] !=
		2.0 {
		t.Fatalf("refusal: %v", full)
	}
	// b stays in use; a is left alone until the idle time passes.
	listed := func(id string) bool {
		for _, s := range f.srv.execSessions.List() {
			if s.ID == id {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); listed(a.id); {
		f.clock.Advance(20 * time.Second)
		f.ok("read_session", map[string]any{"session_id": b.id})
		if time.Now().After(deadline) {
			t.Fatal("the idle session did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	idle := f.fails("read_session", map[string]any{"session_id": a.id}, "SESSION_NOT_FOUND")
	if !strings.Contains(idle["message"].(string), "idle") {
		t.Fatalf("idle end: %v", idle)
	}
	b.write("still here\n")
	b.until("still here\n")
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	gone := f.fails("read_session", map[string]any{"session_id": b.id}, "SESSION_NOT_FOUND")
	if !strings.Contains(gone["message"].(string), "destroyed") {
		t.Fatalf("after destroy: %v", gone)
	}
}

// A session holds at most the operator's output ceiling: the oldest
// output goes, and a reader behind is told how many bytes it missed.
func TestExecSessionOutputCeiling(t *testing.T) {
	f := newFixture(t, simSpec)
	f.policy = policy.Policy{Ceilings: policy.Ceilings{
		MaxOutputBytes: policy.Ceiling[int64]{Value: 4096, Source: "global config C [policy] max_output_bytes"},
	}.Defaulted()}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	r := f.startSession(map[string]any{"instance_id": id, "command": "head -c 50000 /dev/zero | tr '\\0' y"})
	var out map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; {
		out = f.ok("read_session", map[string]any{"session_id": r.id, "max_bytes": 1 << 20, "wait_ms": 1000})
		if out["status"] == "exited" && out["output_bytes"] == 50000.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read: %v", out)
		}
	}
	out = f.ok("read_session", map[string]any{"session_id": r.id, "max_bytes": 1 << 20})
	missed := out["dropped_bytes"].(float64)
	if missed < 50000-4096 || out["buffer_dropped_bytes"] != missed || out["next_cursor"] != 50000.0 ||
		out["done"] != true {
		t.Fatalf("bounded: %v", out)
	}
}

// The tools of issue 31 in the tests every tool takes part in.
func init() {
	for name, h := range map[string]hints{
		"start_session": {destructive: true, openWorld: true}, "read_session": readOnly,
		"write_session": {destructive: true, openWorld: true}, "signal_session": {destructive: true},
		"close_session": {destructive: true, idempotent: true},
		"move_path":     {destructive: true}, "copy_path": {destructive: true}, "path_exists": readOnly,
	} {
		wantHints[name] = h
	}
}

// sessionCanaryCalls calls issue 31's tools for the canary test: a session
// printing its environment, and guest file moves.
func sessionCanaryCalls(check func(string, map[string]any) map[string]any, id string) {
	sid, _ := check("start_session", map[string]any{"instance_id": id, "command": "env; cat"})["session_id"].(string)
	check("write_session", map[string]any{"session_id": sid, "data": "x\n"})
	check("signal_session", map[string]any{"session_id": sid, "signal": "HUP"})
	for range 100 {
		if out := check("read_session", map[string]any{"session_id": sid}); out["done"] == true {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	check("close_session", map[string]any{"session_id": sid})
	check("copy_path", map[string]any{"instance_id": id, "src": "/w/f.txt", "dst": "/w/g.txt"})
	check("move_path", map[string]any{"instance_id": id, "src": "/w/g.txt", "dst": "/w/h.txt"})
	check("path_exists", map[string]any{"instance_id": id, "path": "/w/h.txt"})
}

// sessionReadOnlyArgs are arguments for issue 31's read-only tools, on a
// session started here (before the test looks at the world).
func sessionReadOnlyArgs(f *fixture, id, task string) map[string]map[string]any {
	sid := f.ok("start_session", map[string]any{"instance_id": id, "command": "echo hi"})["session_id"].(string)
	return map[string]map[string]any{
		"read_session": {"session_id": sid},
		"path_exists":  {"instance_id": id, "path": ".sbf/tasks/" + task + ".log"},
	}
}

// get_task_logs with a cursor follows a task's output in pieces, each
// read starting where the last ended, until the task is done; without one
// it answers as v1 did.
func TestTaskLogsCursor(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	task := f.ok("start_background_task", map[string]any{"instance_id": id,
		"command": "echo one; sleep 0.3; echo twé; echo three"})["task_id"].(string)
	var got string
	cursor := 0.0
	for deadline := time.Now().Add(20 * time.Second); ; {
		out := f.ok("get_task_logs", map[string]any{"task_id": task, "cursor": cursor, "max_bytes": 4})
		if out["cursor"] != cursor {
			t.Fatalf("read from %v: %v", cursor, out)
		}
		got += out["output"].(string)
		cursor += float64(len(out["output"].(string)))
		if out["next_cursor"] != cursor {
			t.Fatalf("next_cursor: %v after %q", out, got)
		}
		if out["done"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done: %v", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != "one\ntwé\nthree\n" {
		t.Fatalf("followed %q", got)
	}
	if v1 := f.ok("get_task_logs", map[string]any{"task_id": task, "tail": 1}); v1["logs"] != "three\n" ||
		v1["tail"] != 1.0 {
		t.Fatalf("v1 shape: %v", v1)
	}
	f.fails("get_task_logs", map[string]any{"task_id": task, "cursor": 1000}, "INVALID_ARGUMENTS")
}

// A server that stops ends its sessions' commands: they live in its
// memory only, and a command left running would be one no client reaches.
func TestExecSessionsEndWithTheServer(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	s := f.startSession(map[string]any{"instance_id": id, "argv": []any{"cat"}})
	f.srv.Close()
	if n := len(f.srv.execSessions.List()); n != 0 {
		t.Fatalf("%d sessions after Close", n)
	}
	gone := f.fails("read_session", map[string]any{"session_id": s.id}, "SESSION_NOT_FOUND")
	if !strings.Contains(gone["message"].(string), "server stopped") {
		t.Fatalf("after Close: %v", gone)
	}
}
