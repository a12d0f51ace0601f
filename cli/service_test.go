package cli

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/service"
	"github.com/sandboxforge/sbf/internal/service/servicetest"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

// The acceptance test: the unit `sbf service install` writes
// passes systemd's own check, and its ExecStart= line, run exactly as
// written with the unit's Environment= (SBF_ENABLE_SIM=1 added: the sim
// driver refuses to run without it), expires sim leases with no other sbf
// running: one taken before the loop started, one taken while it runs.
func TestServiceUnitExpiresLeases(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	if runtime.GOOS != "linux" {
		t.Skip("systemd units are Linux's")
	}
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	home, config := lookupEnv(w.env, "HOME"), t.TempDir()
	// Test switches in the installing shell must not reach the service; its
	// settings do. An hour between passes: only a lease's end, or a new
	// lease seen in the host index, can wake the loop within the test.
	install := w.run([]string{"XDG_CONFIG_HOME=" + config, "SBF_ENABLE_SIM=1", "SBF_NOW=2026-01-01T00:00:00Z",
		"SANDBOX_SWEEPER_INTERVAL_SECONDS=3600"}, "service", "install", "--no-start")
	if install.code != 0 || !strings.Contains(install.stdout, "systemctl --user restart sbf-serve.service") {
		t.Fatalf("service install --no-start: exit %d\n%s%s", install.code, install.stdout, install.stderr)
	}
	unit, err := os.ReadFile(filepath.Join(config, "systemd", "user", "sbf-serve.service"))
	if err != nil {
		t.Fatal(err)
	}
	servicetest.VerifyUnit(t, "sbf-serve.service", unit)
	argv, unitEnv, err := service.ParseUnit(unit)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{sbfBinary, "serve", "--loop-only"}; !slices.Equal(argv, want) {
		t.Errorf("ExecStart= runs %q, want %q", argv, want)
	}
	env := []string{"HOME=" + home} // what systemd gives every user service
	for _, e := range unitEnv {
		env = append(env, e.Name+"="+e.Value)
	}
	if lookupEnv(env, "SBF_STATE_HOME") != lookupEnv(w.env, "SBF_STATE_HOME") || lookupEnv(env, "SBF_NOW") != "" ||
		lookupEnv(env, "SBF_ENABLE_SIM") != "" || lookupEnv(env, "SANDBOX_SWEEPER_INTERVAL_SECONDS") != "3600" {
		t.Fatalf("the unit's environment %q: want the installing shell's SBF_STATE_HOME and settings, "+
			"no test switches", env)
	}

	sim := []string{"SBF_ENABLE_SIM=1"}
	if r := w.run(sim, "up", "--auto-approve", "--new", "before", "--ttl", "4s"); r.code != 0 {
		t.Fatalf("up before: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	loop := exec.Command(argv[0], argv[1:]...)
	loop.Env, loop.Dir = append(env, sim...), home
	var logs testutil.SyncBuffer
	loop.Stdout, loop.Stderr = &logs, &logs
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- loop.Wait() }()
	defer func() {
		if loop.ProcessState == nil {
			loop.Process.Kill()
			<-exited
		}
	}()
	waitExpired(t, w, "before", exited, &logs)
	if r := w.run(sim, "up", "--auto-approve", "--new", "during", "--ttl", "3s"); r.code != 0 {
		t.Fatalf("up during: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitExpired(t, w, "during", exited, &logs)

	loop.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the loop ended with %v on SIGTERM, want exit 0\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the loop did not stop within a minute of SIGTERM\n%s", logs.String())
	}
}

// waitExpired waits, at most two minutes, until the state file records the
// sandbox expired and its VM is gone from the sim world.
func waitExpired(t *testing.T, w *simWorkspace, name string, exited <-chan error, logs *testutil.SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if statePhase(t, w, name) == "expired" && !slices.ContainsFunc(w.world(), func(i string) bool {
			return strings.HasSuffix(i, "-"+name)
		}) {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("the loop exited (%v) before %s expired\n%s", err, name, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not expired two minutes on (phase %q, world %v)\n%s",
				name, statePhase(t, w, name), w.world(), logs.String())
		}
	}
}

func statePhase(t *testing.T, w *simWorkspace, name string) string {
	if rec := readState(t, w.root).Sandboxes[name]; rec != nil {
		return string(rec.Phase)
	}
	return ""
}

// install, status and uninstall tell systemd what the issue says, in
// order; a stand-in systemctl records what it was told.
func TestServiceInstallTellsSystemctl(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd units are Linux's")
	}
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	bin, config := t.TempDir(), t.TempDir()
	calls := filepath.Join(bin, "calls")
	write(t, filepath.Join(bin, "systemctl"), "#!/bin/sh\necho \"$*\" >> "+calls+"\necho 'Active: active (running)'\n")
	os.Chmod(filepath.Join(bin, "systemctl"), 0o755)
	env := []string{"XDG_CONFIG_HOME=" + config, "PATH=" + bin + ":" + os.Getenv("PATH")}

	r := w.run(env, "service", "install", w.root)
	if r.code != 0 || !strings.Contains(r.stdout, "journalctl --user -u sbf-serve") {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.run(env, "service", "status", "--json")
	var st serviceStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || !st.Installed ||
		!slices.Equal(st.Command, []string{sbfBinary, "serve", "--loop-only", "--workspace", w.root}) ||
		st.Report != "Active: active (running)" {
		t.Errorf("status --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = w.run(env, "service", "uninstall"); r.code != 0 {
		t.Errorf("uninstall: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(config, "systemd", "user", "sbf-serve.service")); !os.IsNotExist(err) {
		t.Errorf("the unit is still there after uninstall: %v", err)
	}
	got, _ := os.ReadFile(calls)
	want := "--user daemon-reload\n--user enable sbf-serve.service\n--user restart sbf-serve.service\n" +
		"--user status --no-pager --lines 20 sbf-serve.service\n" +
		"--user disable --now sbf-serve.service\n--user daemon-reload\n"
	if string(got) != want {
		t.Errorf("systemctl was told:\n%s\nwant:\n%s", got, want)
	}
	if r = w.run(env, "service", "status"); r.code != 3 || !strings.Contains(r.stdout, "not installed") {
		t.Errorf("status after uninstall: exit %d, want 3 (not running)\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A shell with no user systemd (su, sudo, a container): install writes the
// unit but says it could not start it and what to do; status and
// uninstall do not pretend (exit 1, not 0 or "stopped").
func TestServiceWithoutUserManager(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd units are Linux's")
	}
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	bin, config := t.TempDir(), t.TempDir()
	write(t, filepath.Join(bin, "systemctl"), "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n")
	os.Chmod(filepath.Join(bin, "systemctl"), 0o755)
	env := []string{"XDG_CONFIG_HOME=" + config, "PATH=" + bin + ":" + os.Getenv("PATH")}
	unit := filepath.Join(config, "systemd", "user", "sbf-serve.service")

	r := w.run(env, "service", "install", w.root)
	if r.code != 1 || !strings.Contains(r.stderr, "no systemd user service manager answers") ||
		!strings.Contains(r.stderr, "Next: ") || !strings.Contains(r.stderr, "loginctl enable-linger") {
		t.Errorf("install: exit %d, want 1 and the next step\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Errorf("install wrote no unit: %v", err)
	}
	if r = w.run(env, "service", "status"); r.code != 1 || !strings.Contains(r.stderr, "cannot say whether") {
		t.Errorf("status: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.run(env, "service", "uninstall")
	if r.code != 1 || strings.Contains(r.stdout, "stopped") || !strings.Contains(r.stderr, "could not stop") {
		t.Errorf("uninstall: exit %d, want 1 without 'stopped'\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestServiceUsageErrors(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, spec.FileName), "[vm]\ndriver = \"sim\"\n")
	for _, args := range [][]string{
		{"serve", "--workspace", ws},
		{"serve", "--loop-only", "127.0.0.1:9"},
		{"serve", "--loop-only", "--workspace", t.TempDir()},
		{"service", "install", "--dry-run", t.TempDir()},
		{"service", "install", "--dry-run", "--http", "127.0.0.1:9"}, // serving nothing named
		{"service", "install", "--dry-run", "--http"},
		{"service", "install", "--dry-run", "--http", filepath.Join(ws, "missing")},
		{"service", "install", "--dry-run", "--token-file", "/x"},
	} {
		if r := sbf(t, nil, args...); r.code != 2 {
			t.Errorf("sbf %s: exit %d, want 2 (usage)\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	// --http without --token-file: the server's generated token, named in
	// the unit so clients can be pointed at it (a dry run makes nothing);
	// it serves the folder named, and starts in sbf's state folder.
	for addr, want := range map[string]string{
		"":            "serve 127.0.0.1:8765 --token-file /",
		"127.0.0.1:9": "serve 127.0.0.1:9 --token-file /",
	} {
		args := []string{"service", "install", "--dry-run", "--http"}
		if addr != "" {
			args = append(args, addr)
		}
		r := sbf(t, nil, append(args, ws)...)
		file := "/mcp/service-http-" + strings.ReplaceAll(cmp.Or(addr, "127.0.0.1:8765"), ":", "_") + ".token"
		served := " --workspace-root " + ws + "\n"
		if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, file+served) ||
			!strings.Contains(r.stdout, "\nWorkingDirectory=/") {
			t.Errorf("sbf %s: exit %d, want a unit running %q…%q\n%s%s", strings.Join(args, " "), r.code, want, file,
				r.stdout, r.stderr)
		}
	}
}
