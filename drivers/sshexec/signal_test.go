package sshexec

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// paths are the two ways a command runs: the guest shell (no stdin) and a
// session of its own (stdin).
var paths = []struct {
	name  string
	stdin func() io.Reader
	via   string
}{
	{"guest shell", func() io.Reader { return nil }, "ssh-shell"},
	{"own session", func() io.Reader { return strings.NewReader("") }, "ssh"},
}

// waitFor polls until the file exists.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func TestExecStreamsOutputAsItComes(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			p, _ := guest(t, Fallbacks{})
			gate := filepath.Join(t.TempDir(), "gate")
			out, errOut := &syncBuffer{}, &syncBuffer{}
			done := make(chan drivers.ExecResult, 1)
			go func() {
				res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
					Command: "echo first; echo oops >&2; while [ ! -e " + gate + " ]; do sleep 0.02; done; echo second",
					Stdin:   path.stdin(), StdoutTo: out, StderrTo: errOut})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			for deadline := time.Now().Add(10 * time.Second); out.String() != "first\n" ||
				errOut.String() != "oops\n"; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("output did not arrive while the command ran: stdout %q, stderr %q", out.String(),
						errOut.String())
				}
			}
			os.WriteFile(gate, nil, 0o644)
			res := <-done
			if out.String() != "first\nsecond\n" || res.Stdout != "first\nsecond\n" || res.Stderr != "oops\n" ||
				res.Via != path.via {
				t.Errorf("streamed %q, result %+v", out.String(), res)
			}
		})
	}
}

func TestExecForwardsSignalsToEveryProcessOfTheCommand(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			p, g := guest(t, Fallbacks{})
			dir := t.TempDir()
			started, caught := filepath.Join(dir, "started"), filepath.Join(dir, "child-caught")
			signals := make(chan drivers.Signal, 1)
			done := make(chan drivers.ExecResult, 1)
			go func() {
				// The child traps INT in a shell of its own, as a program
				// that cleans up on Ctrl-C would; its parent dies of it.
				child := `sh -c 'trap "touch ` + caught + `; exit 0" INT; touch ` + started +
					`; while :; do sleep 0.05; done'`
				res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
					Command: child + "; sleep 30", Stdin: path.stdin(), Signals: signals})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			waitFor(t, started)
			signals <- "INT"
			waitFor(t, caught)
			select {
			case res := <-done:
				if res.ExitCode != 130 {
					t.Errorf("a command ended by INT exits 130 as in a shell; got %+v", res)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the command did not end on INT")
			}
			before := g.Sessions.Load()
			if res, err := p.Exec(context.Background(), instance,
				drivers.ExecRequest{Command: "echo alive"}); err != nil || res.Stdout != "alive\n" {
				t.Errorf("after a forwarded signal: %+v %v", res, err)
			}
			if path.via == "ssh-shell" && g.Sessions.Load() != before {
				t.Errorf("the guest shell did not survive the signal its command got: a new session was opened")
			}
		})
	}
}

func TestAnAbandonedCommandDoesNotKeepRunning(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			p, _ := guest(t, Fallbacks{})
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := p.Exec(ctx, instance, drivers.ExecRequest{
					Command: "sh -c 'echo $$ > " + pidFile + "; while :; do sleep 0.05; done'", Stdin: path.stdin()})
				done <- err
			}()
			waitFor(t, pidFile)
			cancel()
			if err := <-done; err == nil {
				t.Error("a cancelled command reported no error")
			}
			data, _ := os.ReadFile(pidFile)
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 0 {
				t.Fatalf("the command's pid file held %q", data)
			}
			for deadline := time.Now().Add(5 * time.Second); processExists(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the command (pid %d) went on running in the guest after its caller gave up", pid)
				}
			}
		})
	}
}

// syncBuffer is the output the command's stream and the test share.
type syncBuffer struct{ testutil.SyncBuffer }

// A command with stdin ends when it ends, not when its stdin does: a
// person's terminal may never send its end.
func TestACommandDoesNotWaitForStdinItDoesNotRead(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	stdin, w := io.Pipe()
	defer w.Close()
	done := make(chan drivers.ExecResult, 1)
	go func() {
		res, _ := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo done", Stdin: stdin})
		done <- res
	}()
	select {
	case res := <-done:
		if res.Stdout != "done\n" || res.Via != "ssh" {
			t.Errorf("%+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command's end waited for its stdin's")
	}
}

func newWatchedBuffer() *syncBuffer { return &syncBuffer{} }

// waitFor polls until the output holds want.
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.String(),
		want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never held %q", s.String(), want)
		}
	}
}

// After a forwarded Ctrl-C the command's own status comes back, as ssh -t
// passes it on: a trap's `exit 9` is 9, and what the trap prints is the
// command's output, not the next one's (issue 40: sbf exec said 130). A
// command the interrupt ended is 130; one that ended quietly after it (a
// list cut short) is 130 too, never a success.
func TestAForwardedInterruptPassesTheCommandsStatus(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			p, _ := guest(t, Fallbacks{})
			dir := t.TempDir()
			// Each command says it started (touch $S) once its traps are set.
			for i, c := range []struct {
				command string
				code    int
				stdout  string
			}{
				{`trap "sleep 0.2; echo cleaned up; exit 9" INT; touch $S; sleep 30`, 9, "cleaned up\n"},
				{`sh -c 'trap "exit 9" INT; touch $S; while :; do sleep 0.05; done'; echo not reached`, 9, ""},
				{`touch $S; sleep 30`, 130, ""},
				{`sh -c 'trap "exit 0" INT; touch $S; while :; do sleep 0.05; done'; sleep 30`, 130, ""},
			} {
				started := filepath.Join(dir, strconv.Itoa(i))
				signals := make(chan drivers.Signal, 1)
				done := make(chan drivers.ExecResult, 1)
				go func() {
					res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
						Command: "export S=" + started + "; " + c.command, Stdin: path.stdin(), Signals: signals})
					if err != nil {
						t.Error(err)
					}
					done <- res
				}()
				waitFor(t, started)
				time.Sleep(100 * time.Millisecond) // into the sleep
				signals <- "INT"
				select {
				case res := <-done:
					if res.ExitCode != c.code || res.Stdout != c.stdout {
						t.Errorf("%q after INT: %+v, want exit %d and %q", c.command, res, c.code, c.stdout)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%q did not end on INT", c.command)
				}
				if res, err := p.Exec(context.Background(), instance,
					drivers.ExecRequest{Command: "echo next"}); err != nil || res.Stdout != "next\n" {
					t.Errorf("the command after %q: %+v %v", c.command, res, err)
				}
			}
		})
	}
}
