package sim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
)

func runningSim(t *testing.T) (*Driver, string) {
	t.Helper()
	d := newSim(t, t.TempDir(), "")
	name := "sbf-01234567-api"
	ctx := context.Background()
	if err := d.Create(ctx, drivers.Spec{Name: name}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, name, drivers.ExecRequest{Command: "true"}); err == nil {
		t.Error("a stopped instance ran a command")
	}
	if err := d.Start(ctx, drivers.Spec{Name: name}); err != nil {
		t.Fatal(err)
	}
	return d, name
}

// The sim runs commands for real, in the instance's own folder.
func TestSimExecRunsCommands(t *testing.T) {
	d, name := runningSim(t)
	ctx := context.Background()
	res, err := d.Exec(ctx, name,
		drivers.ExecRequest{Command: `echo out; echo err >&2; pwd; test "$HOME" = "$(pwd)"; exit 42`})
	if err != nil || res.ExitCode != 42 || !strings.Contains(res.Stdout, "out\n") || res.Stderr != "err\n" ||
		!strings.HasSuffix(strings.TrimSpace(res.Stdout), filepath.Join("guests", name)) {
		t.Fatalf("exec: %+v %v", res, err)
	}
	res, _ = d.Exec(ctx, name, drivers.ExecRequest{Command: "cat", Stdin: strings.NewReader("piped")})
	if res.Stdout != "piped" {
		t.Errorf("stdin: %q", res.Stdout)
	}
	start := time.Now()
	res, err = d.Exec(ctx, name, drivers.ExecRequest{Command: "sleep 30 & sleep 30; echo never",
		Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || time.Since(start) > 5*time.Second || strings.Contains(res.Stdout, "never") {
		t.Errorf("timeout: %+v %v after %s", res, err, time.Since(start))
	}
}

func TestSimCopyStaysInTheInstanceFolder(t *testing.T) {
	d, name := runningSim(t)
	ctx := context.Background()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "f.txt"), []byte("data"), 0o644)
	if err := d.CopyIn(ctx, name, src, "/work/src"); err != nil {
		t.Fatal(err)
	}
	if res, _ := d.Exec(ctx, name, drivers.ExecRequest{Command: "cat work/src/sub/f.txt"}); res.Stdout != "data" {
		t.Errorf("copied file in the guest: %+v", res)
	}
	var back bytes.Buffer
	if err := d.GetArchive(ctx, name, "/work/src", &back); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ReadTar(t, back.Bytes())["src/sub/f.txt"].Body; got != "data" {
		t.Errorf("archived back: %q", got)
	}
	if p := d.GuestPath(name, "../../../etc/passwd"); !strings.HasPrefix(p, d.guestDir(name)) {
		t.Errorf("guest path %s escapes %s", p, d.guestDir(name))
	}
	d.Delete(ctx, name)
	if _, err := os.Stat(d.guestDir(name)); !os.IsNotExist(err) {
		t.Errorf("the guest folder outlived its instance: %v", err)
	}
}

// A forwarded signal reaches the command's children too, and a command a
// signal ended exits 128+n as in a shell.
func TestSimForwardsSignalsToTheCommandsGroup(t *testing.T) {
	d, name := runningSim(t)
	signals := make(chan drivers.Signal, 1)
	done := make(chan drivers.ExecResult, 1)
	go func() {
		res, err := d.Exec(context.Background(), name, drivers.ExecRequest{
			Command: `sh -c 'trap "echo child-caught; exit 0" INT; touch started; while :; do sleep 0.05; done'; sleep 30`,
			Signals: signals})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	started := filepath.Join(d.guestDir(name), "started")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	signals <- "INT"
	select {
	case res := <-done:
		if res.ExitCode != 130 || res.Stdout != "child-caught\n" {
			t.Errorf("after INT: %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end on INT")
	}
}
