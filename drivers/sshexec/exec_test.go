package sshexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
)

const instance = "sbf-01234567-api"

// guest is a pool whose one instance is an in-process SSH server.
func guest(t *testing.T, fb Fallbacks) (*Pool, *sshtest.Server) {
	g := sshtest.Start(t)
	p := New(Options{
		Target: func(_ context.Context, name string) (Target, error) {
			if name != instance {
				return Target{}, errors.New("no such instance " + name)
			}
			return Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{"/nonexistent",
				g.KeyFile}}, nil
		},
		Fallbacks: fb,
	})
	t.Cleanup(func() { p.Close() })
	return p, g
}

func TestExecOverOnePersistentConnection(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	ctx := context.Background()
	res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "echo out; echo err >&2; exit 7"})
	if err != nil || res.ExitCode != 7 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Via != "ssh-shell" {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	res, _ = p.Exec(ctx, instance, drivers.ExecRequest{Command: "tr a-z A-Z", Stdin: strings.NewReader("hello")})
	if res.Stdout != "HELLO" || res.ExitCode != 0 || res.Via != "ssh" {
		t.Errorf("stdin goes through a session of its own: %+v", res)
	}
	for i := 0; i < 20; i++ {
		if res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %d: %+v %v", i, res, err)
		}
	}
	// One connection; one session for the guest shell, one for the
	// command with stdin.
	if c, s := g.Connections.Load(), g.Sessions.Load(); c != 1 || s != 2 {
		t.Errorf("%d connections and %d sessions for 22 commands; want 1 and 2", c, s)
	}
	p.Drop(instance) // as after a stop: the next command dials again
	if _, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "true"}); err != nil || g.Connections.Load() != 2 {
		t.Errorf("redial: %v, %d connections", err, g.Connections.Load())
	}
}

func TestGuestShellKeepsCommandsApart(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	ctx := context.Background()
	run := func(cmd string) drivers.ExecResult {
		t.Helper()
		res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: cmd})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}
	elsewhere := t.TempDir()
	home := run("pwd").Stdout
	run("cd " + elsewhere + "; export LEAK=1; LOCAL=2")
	if res := run(`pwd; echo "[$LEAK$LOCAL]"`); res.Stdout != home+"[]\n" {
		t.Errorf("state leaked between commands: %q (started in %q)", res.Stdout, home)
	}
	if res := run("printf 'no newline'"); res.Stdout != "no newline" {
		t.Errorf("output without a final newline: %q", res.Stdout)
	}
	if res := run(`printf '\n@@sbf-0000000000000000-1 0\nafter\n'; exit 4`); res.ExitCode != 4 ||
		!strings.Contains(res.Stdout, "after") {
		t.Errorf("a fake marker ended the output early: %+v", res)
	}
	if res := run("cat; echo read-nothing"); res.Stdout != "read-nothing\n" {
		t.Errorf("a command without stdin read something: %q", res.Stdout)
	}
	if res := run("echo 'unbalanced"); res.ExitCode == 0 {
		t.Errorf("a syntax error succeeded: %+v", res)
	}
	if res := run("echo still-alive"); res.Stdout != "still-alive\n" {
		t.Errorf("the guest shell did not survive a bad command: %+v", res)
	}
	before := g.Sessions.Load()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := p.Exec(ctx, instance,
				drivers.ExecRequest{Command: "sleep 0.3; echo done"}); err != nil || res.Stdout != "done\n" {
				t.Errorf("concurrent exec: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if extra := g.Sessions.Load() - before; extra < 1 || extra > 3 {
		t.Errorf("4 concurrent commands opened %d sessions; the busy shell should start others", extra)
	}
}

// A long command (a loop pass's docker probe, an agent's build) holds one
// guest shell; the commands meanwhile share one more, never a session each.
func TestABusyShellSendsCommandsToAnotherShell(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	ctx := context.Background()
	if err := p.Warm(ctx, instance); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	long := make(chan error, 1)
	go func() {
		_, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "touch " + started + "; sleep 2"})
		long <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal("the long command never started")
		}
	}
	before := g.Sessions.Load()
	for i := 0; i < 10; i++ {
		if res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "true"}); err != nil || res.Via != "ssh-shell" {
			t.Fatalf("command %d beside the long one: %+v, %v", i, res, err)
		}
	}
	if extra := g.Sessions.Load() - before; extra != 1 {
		t.Errorf("10 commands beside a long one opened %d sessions; want 1 (a second shell)", extra)
	}
	if err := <-long; err != nil {
		t.Fatal(err)
	}
}

func TestExecTimeoutKillsTheCommand(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	marker := filepath.Join(t.TempDir(), "still-running")
	start := time.Now()
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
		Command: "sleep 3 && touch " + marker, Timeout: time.Second})
	if err != nil || !res.TimedOut || res.ExitCode != -1 || time.Since(start) > 3*time.Second {
		t.Fatalf("timeout: %+v, %v after %s", res, err, time.Since(start))
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command kept running after its timeout")
	}
}

func TestExecTimeoutOnASessionOfItsOwn(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
		Command: "sleep 3", Stdin: strings.NewReader(""), Timeout: time.Second})
	if err != nil || res.Via != "ssh" || !res.TimedOut || res.ExitCode != -1 ||
		res.Stderr != "Command timed out after 1s\n" {
		t.Fatalf("timeout with stdin: %+v, %v", res, err)
	}
}

func TestExecCapsOutput(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "head -c 3000000 /dev/zero",
		MaxOutput: 1 << 20})
	if err != nil || len(res.Stdout) != 1<<20 || res.StdoutBytes != 3000000 || !res.StdoutTruncated ||
		res.StderrTruncated {
		t.Errorf("cap: %d kept of %d, truncated %v, %v", len(res.Stdout), res.StdoutBytes, res.StdoutTruncated, err)
	}
}

// sbf keeps a command's deadline itself: the command is not wrapped in
// the guest's `timeout` (two more execs per command, ~140 ms under
// software emulation), and it still runs on the long-lived shell.
func TestExecWithADeadlineIsNotWrappedInTimeout(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{
		// The names of a command's two nearest ancestors.
		Command: `sh -c 'p=$PPID; for i in 1 2; do cat /proc/$p/comm; p=$(awk "/^PPid/{print \$2}" /proc/$p/status); done'`,
		Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 || res.Via != "ssh-shell" || strings.Contains(res.Stdout, "timeout") {
		t.Errorf("a command with a deadline: %+v %v", res, err)
	}
}
