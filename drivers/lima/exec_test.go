package lima

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

const instance = "sbf-01234567-api"

// guestFixture wires the fake limactl to an in-process SSH guest: `list
// --json NAME` points at an ssh.config for it, as Lima's does.
func guestFixture(t *testing.T) (*fake, *Driver, *guestServer) {
	f := newFake(t)
	g := startGuest(t)
	host, port, _ := strings.Cut(g.addr, ":")
	cfg := filepath.Join(t.TempDir(), "ssh.config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("# This SSH config file can be passed to 'ssh -F'.\nHost lima-%s\n  IdentityFile \"%s\"\n"+
		"  StrictHostKeyChecking no\n  User tester\n  ControlMaster auto\n  Hostname %s\n  Port %s\n", instance, g.keyFile, host, port)), 0o644)
	f.reply("list", fmt.Sprintf(`{"name":%q,"status":"Running","sshConfigFile":%q,"sshLocalPort":%s}`+"\n", instance, cfg, port), "", 0)
	return f, f.driver(), g
}

func TestExecOverOnePersistentConnection(t *testing.T) {
	_, d, g := guestFixture(t)
	ctx := context.Background()
	res, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: "echo out; echo err >&2; exit 7"})
	if err != nil || res.ExitCode != 7 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Via != "ssh-shell" {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	res, _ = d.Exec(ctx, instance, drivers.ExecRequest{Command: "tr a-z A-Z", Stdin: strings.NewReader("hello")})
	if res.Stdout != "HELLO" || res.ExitCode != 0 || res.Via != "ssh" {
		t.Errorf("stdin goes through a session of its own: %+v", res)
	}
	for i := 0; i < 20; i++ {
		if res, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %d: %+v %v", i, res, err)
		}
	}
	// One connection; one session for the guest shell, one for the
	// command with stdin.
	if c, s := g.connections.Load(), g.sessions.Load(); c != 1 || s != 2 {
		t.Errorf("%d connections and %d sessions for 22 commands; want 1 and 2", c, s)
	}
	d.dropConn(instance) // as after a stop: the next command dials again
	if _, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: "true"}); err != nil || g.connections.Load() != 2 {
		t.Errorf("redial: %v, %d connections", err, g.connections.Load())
	}
}

func TestGuestShellKeepsCommandsApart(t *testing.T) {
	_, d, g := guestFixture(t)
	ctx := context.Background()
	run := func(cmd string) drivers.ExecResult {
		t.Helper()
		res, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: cmd})
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
	if res := run(`printf '\n@@sbf-0000000000000000-1 0\nafter\n'; exit 4`); res.ExitCode != 4 || !strings.Contains(res.Stdout, "after") {
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
	before := g.sessions.Load()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: "sleep 0.3; echo done"}); err != nil || res.Stdout != "done\n" {
				t.Errorf("concurrent exec: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if extra := g.sessions.Load() - before; extra < 1 || extra > 3 {
		t.Errorf("4 concurrent commands opened %d sessions; the busy shell should send the others to sessions", extra)
	}
}

func TestExecTimeoutKillsTheCommand(t *testing.T) {
	_, d, _ := guestFixture(t)
	marker := filepath.Join(t.TempDir(), "still-running")
	start := time.Now()
	res, err := d.Exec(context.Background(), instance, drivers.ExecRequest{
		Command: "sleep 3 && touch " + marker, Timeout: time.Second})
	if err != nil || !res.TimedOut || res.ExitCode != -1 || time.Since(start) > 3*time.Second {
		t.Fatalf("timeout: %+v, %v after %s", res, err, time.Since(start))
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command kept running after its timeout")
	}
}

func TestExecCapsOutput(t *testing.T) {
	_, d, _ := guestFixture(t)
	res, err := d.Exec(context.Background(), instance, drivers.ExecRequest{Command: "head -c 3000000 /dev/zero", MaxOutput: 1 << 20})
	if err != nil || len(res.Stdout) != 1<<20 || res.StdoutBytes != 3000000 || !res.StdoutTruncated || res.StderrTruncated {
		t.Errorf("cap: %d kept of %d, truncated %v, %v", len(res.Stdout), res.StdoutBytes, res.StdoutTruncated, err)
	}
}

func TestExecFallsBackToLimactlShell(t *testing.T) {
	f := newFake(t)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running"}`+"\n", "", 0)
	f.reply("shell", "from limactl shell\n", "", 3)
	var debug []string
	o := f.options()
	o.Debug = func(format string, args ...any) { debug = append(debug, fmt.Sprintf(format, args...)) }
	d, _ := New(context.Background(), o)
	res, err := d.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo hi"})
	if err != nil || res.Via != "limactl shell" || res.ExitCode != 3 || res.Stdout != "from limactl shell\n" {
		t.Fatalf("fallback = %+v, %v", res, err)
	}
	if last := f.argv()[len(f.argv())-1]; last != "--tty=false shell --workdir / sbf-01234567-api -- sh -c echo hi" {
		t.Errorf("argv = %q", last)
	}
	if len(debug) != 1 || !strings.Contains(debug[0], "falling back to limactl shell") {
		t.Errorf("debug = %v", debug)
	}
}

func TestCopyRoundTrip(t *testing.T) {
	_, d, g := guestFixture(t)
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(src, "sub", "deep", "b.bin"), bytes.Repeat([]byte{0, 1, 2}, 100000), 0o600)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("a.txt", filepath.Join(src, "link"))
	// The test guest is this host, so "remote" paths are local ones.
	remote := filepath.Join(t.TempDir(), "in", "guest", "tree")
	sessions := g.sessions.Load()
	ctx := context.Background()
	if err := d.CopyIn(ctx, instance, src, remote); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(t.TempDir(), "back")
	if err := d.CopyOut(ctx, instance, remote, back); err != nil {
		t.Fatal(err)
	}
	if n := g.sessions.Load() - sessions; n != 2 {
		t.Errorf("%d sessions for two copies of 5 entries; want one each", n)
	}
	for _, rel := range []string{"a.txt", "sub/deep/b.bin", "run.sh"} {
		want, _ := os.ReadFile(filepath.Join(src, rel))
		got, err := os.ReadFile(filepath.Join(back, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s did not survive the round trip: %v", rel, err)
		}
	}
	if info, _ := os.Stat(filepath.Join(back, "run.sh")); info.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode = %v", info.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(back, "link")); target != "a.txt" {
		t.Errorf("symlink = %q", target)
	}
	file := filepath.Join(t.TempDir(), "one.txt")
	if err := d.CopyOut(ctx, instance, filepath.Join(remote, "a.txt"), file); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "alpha" {
		t.Errorf("single file = %q", got)
	}
}

func TestCopyOutRefusesEntriesOutsideTheTarget(t *testing.T) {
	for _, name := range []string{"../escape", "tree/../../escape", "other/file", "/etc/passwd"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		if err := readTar(&buf, "tree", t.TempDir()); err == nil {
			t.Errorf("entry %q was extracted", name)
		}
	}
}
