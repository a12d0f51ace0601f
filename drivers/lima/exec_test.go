package lima

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
)

const instance = "sbf-01234567-api"

// guestFixture wires the fake limactl to an in-process SSH guest: `list
// --json NAME` points at an ssh.config for it, as Lima's does.
func guestFixture(t *testing.T) (*fake, *Driver, *sshtest.Server) {
	f := newFake(t)
	g := sshtest.Start(t)
	cfg := filepath.Join(t.TempDir(), "ssh.config")
	os.WriteFile(cfg,
		[]byte(fmt.Sprintf("# This SSH config file can be passed to 'ssh -F'.\nHost lima-%s\n  IdentityFile \"%s\"\n"+
			"  StrictHostKeyChecking no\n  User tester\n  ControlMaster auto\n  ControlPath \"%s\"\n  Hostname %s\n"+
			"  Port %s\n", instance, g.KeyFile, filepath.Join(f.instanceDir(), "ssh.sock"), g.Host, g.Port)), 0o644)
	f.reply("list", fmt.Sprintf(`{"name":%q,"status":"Running","sshConfigFile":%q,"sshLocalPort":%s}`+"\n",
		instance, cfg, g.Port), "", 0)
	d := f.driver()
	t.Cleanup(func() { d.Close() })
	return f, d, g
}

// debugged is a driver on the fake limactl whose fallback notes are kept.
func debugged(t *testing.T, f *fake) (*Driver, *[]string) {
	var debug []string
	o := f.options()
	o.Debug = func(format string, args ...any) { debug = append(debug, fmt.Sprintf(format, args...)) }
	o.Clock = &ticking{}
	d, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return d, &debug
}

// ticking advances a second each time it is read, so a duration proves
// which clock measured it.
type ticking struct {
	clock.Fixed
	reads int
}

func (c *ticking) Now() time.Time {
	c.reads++
	return c.T.Add(time.Duration(c.reads) * time.Second)
}

func TestExecAndCopyOverTheInstancesSSHConfig(t *testing.T) {
	_, d, g := guestFixture(t)
	ctx := context.Background()
	if d.Alive(instance) {
		t.Error("alive before any command")
	}
	res, err := d.Exec(ctx, instance, drivers.ExecRequest{Command: "echo out; exit 7"})
	if err != nil || res.ExitCode != 7 || res.Stdout != "out\n" || res.Via != "ssh-shell" {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	src := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(src, []byte("alpha"), 0o644)
	remote := filepath.Join(t.TempDir(), "in", "a.txt")
	if err := d.CopyIn(ctx, instance, src, remote); err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	if err := d.GetArchive(ctx, instance, remote, &back); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ReadTar(t, back.Bytes())["a.txt"].Body; got != "alpha" {
		t.Errorf("round trip = %q", got)
	}
	if !d.Alive(instance) || g.Connections.Load() != 1 {
		t.Errorf("alive %v with %d connections; want one, open", d.Alive(instance), g.Connections.Load())
	}
	d.dropConn(instance) // what Stop and Delete do
	if d.Alive(instance) {
		t.Error("alive after the connection was dropped")
	}
}

func TestExecFallsBackToLimactlShell(t *testing.T) {
	f := newFake(t)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running"}`+"\n", "", 0)
	f.reply("shell", "from limactl shell\n", "the command's own stderr\n", 3)
	d, debug := debugged(t, f)
	var streamed bytes.Buffer
	res, err := d.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo hi", StderrTo: &streamed})
	if err != nil || res.Via != "limactl shell" || res.ExitCode != 3 || res.Stdout != "from limactl shell\n" ||
		res.Stderr != "the command's own stderr\n" || streamed.String() != res.Stderr || res.Duration != time.Second {
		t.Fatalf("fallback = %+v, %v; streamed %q", res, err, streamed.String())
	}
	last := f.argv()[len(f.argv())-1]
	if !strings.HasPrefix(last, `--tty=false shell --workdir / sbf-01234567-api -- sh -c printf '%s\n' "$0" >&2; `+
		`exec sh -c "$1" @@sbf-`) || !strings.HasSuffix(last, "-started echo hi") {
		t.Errorf("argv = %q", last)
	}
	if len(*debug) != 1 || !strings.Contains((*debug)[0], "falling back to limactl shell") {
		t.Errorf("debug = %v", *debug)
	}
}

// A fallback whose ssh never reached the guest is an error naming why, not
// the command's exit status 255 with nothing said (sbf exec exits 125 for
// it, as docker does).
func TestExecFallbackThatNeverReachesTheGuestSaysWhy(t *testing.T) {
	f := newFake(t)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running"}`+"\n", "", 0)
	f.reply("shell", "", "ssh: connect to host 127.0.0.1 port 60022: Connection refused\r\n", 255)
	os.WriteFile(filepath.Join(f.dir, "shell.unreached"), nil, 0o644)
	d, _ := debugged(t, f)
	var streamed bytes.Buffer
	res, err := d.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true", StderrTo: &streamed})
	if err == nil || !strings.Contains(err.Error(), "cannot reach sbf-01234567-api") ||
		!strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("exec = %+v, %v", res, err)
	}
	if streamed.Len() != 0 {
		t.Errorf("ssh's own words were passed on as the command's: %q", streamed.String())
	}
}

func TestCopyFallsBackToLimactlCopy(t *testing.T) {
	f := newFake(t)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Stopped","sshConfigFile":"/nonexistent"}`+"\n", "", 0)
	f.reply("copy", "", "", 0)
	d, debug := debugged(t, f)
	ctx := context.Background()
	if err := d.CopyIn(ctx, instance, "/here", "/there"); err != nil {
		t.Fatal(err)
	}
	// Out of the guest there is no fallback: limactl copy would write a
	// host path unconfined; the engine's own writer is the only way back.
	if err := d.GetArchive(ctx, instance, "/there", io.Discard); err == nil {
		t.Error("an archive came out of an instance SSH cannot reach")
	}
	var copies []string
	for _, a := range f.argv() {
		if strings.Contains(a, " copy ") {
			copies = append(copies, a)
		}
	}
	want := []string{"--tty=false copy -r /here sbf-01234567-api:/there"}
	if strings.Join(copies, "\n") != strings.Join(want, "\n") {
		t.Errorf("limactl copy calls = %q", copies)
	}
	if len(*debug) != 1 || !strings.Contains((*debug)[0], "is Stopped, not running") ||
		!strings.Contains((*debug)[0], "falling back to limactl copy") {
		t.Errorf("debug = %v", *debug)
	}
}

// Sessions on Lima's master carry the environment of when it connected,
// at the boot: once sbf's egress settings rewrote /etc/environment, the
// instance is reached on a connection of sbf's own until a start boots it
// again and its settings have not been run since (an instance whose
// settings are taken off runs them once more, so stays off the master).
func TestEgressSettingsTakeTheInstanceOffLimasMaster(t *testing.T) {
	f, d, _ := guestFixture(t)
	controlPath := func() string {
		tgt, err := d.sshTarget(t.Context(), instance)
		if err != nil {
			t.Fatal(err)
		}
		return tgt.ControlPath
	}
	if got, want := controlPath(), filepath.Join(f.instanceDir(), "ssh.sock"); got != want {
		t.Fatalf("ControlPath = %q, want Lima's %q", got, want)
	}
	bin := t.TempDir() // sudo -n sh -c SCRIPT, as the guest's: the settings are not run on this host
	os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	os.MkdirAll(d.egressDir(instance), 0o700)
	d.configureGuestEgress(t.Context(), drivers.Spec{Name: instance,
		Egress: &drivers.Egress{Mode: "allowlist", Allow: []string{"example.test"}}})
	if got := controlPath(); got != "" {
		t.Errorf("after the egress settings, ControlPath = %q; want none", got)
	}
	if err := d.Start(t.Context(), drivers.Spec{Name: instance}); err != nil { // the settings are taken off
		t.Fatal(err)
	}
	if got := controlPath(); got != "" {
		t.Errorf("after a start that took the settings off, ControlPath = %q; want none", got)
	}
	if err := d.Start(t.Context(), drivers.Spec{Name: instance}); err != nil {
		t.Fatal(err)
	}
	if got := controlPath(); got == "" {
		t.Error("after a start that ran no settings, the master is still not offered")
	}
}

func TestParseSSHConfig(t *testing.T) {
	config := "Host lima-x\n  IdentityFile \"/k 1\"\n  IdentityFile /k2\n" +
		"  User u\n  ControlMaster auto\n  ControlPath \"/i x/ssh.sock\"\n  Hostname 127.0.0.1\n  Port \"60022\"\n"
	got, err := parseSSHConfig(config)
	if err != nil || got.Host != "127.0.0.1" || got.Port != "60022" || got.User != "u" ||
		strings.Join(got.IdentityFiles, ",") != "/k 1,/k2" || got.ControlPath != "/i x/ssh.sock" {
		t.Errorf("parsed %+v, %v", got, err)
	}
	if _, err := parseSSHConfig("Host lima-x\n  User u\n  Hostname 127.0.0.1\n  Port 22\n"); err == nil {
		t.Error("a config without a key was accepted")
	}
}

// A copy out of an instance limactl no longer lists (or lists without an
// ssh.config) says so; no error reads "<nil>".
func TestCopyOutOfAMissingInstanceSaysWhy(t *testing.T) {
	for _, tc := range []struct{ list, want string }{
		{"", "limactl lists no such instance"},
		{`{"name":"sbf-01234567-api","status":"Running"}` + "\n", "limactl names none for it"},
	} {
		f := newFake(t)
		f.reply("list", tc.list, "", 0)
		d := f.driver()
		err := d.GetArchive(context.Background(), instance, "/there", io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("list %q: %v", tc.list, err)
		}
		if tc.list == "" && !errors.Is(err, drivers.ErrNotFound) {
			t.Errorf("a missing instance is not ErrNotFound: %v", err)
		}
		d.Close()
	}
}
