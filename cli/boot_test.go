package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"
)

const oneSimSandbox = `
[vm]
driver = "sim"
[sandboxes.api]
`

// bootingSandbox is a workspace whose sandbox api holds a lease and whose
// VM was started again and left booting, as a start cut short leaves it.
func bootingSandbox(t *testing.T) (dir string, world *sim.Driver, instance string) {
	dir = simDir(t, oneSimSandbox)
	if r := sbf(t, nil, "-C", dir, "up", "api", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	world, err := sim.New(sim.Options{Dir: inProcessSimWorld(t, dir), Boot: "api=hold"})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := world.List(context.Background())
	instance = list[0].Name
	world.ForceStop(context.Background(), instance)
	ctx, cancel := context.WithCancel(context.Background())
	ctx = drivers.WithProgress(ctx, func(string) { cancel() })
	if err := world.Start(ctx, drivers.Spec{Name: instance}); !errors.Is(err, context.Canceled) {
		t.Fatalf("start cut short: %v", err)
	}
	return dir, world, instance
}

// sbfAsync runs sbf in-process in the background; its stderr can be read
// while it runs.
func sbfAsync(t *testing.T, args ...string) (stderr *testutil.SyncBuffer, done <-chan result) {
	home := testHome(t)
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return home
		case policy.EnableSimVar:
			return "1"
		}
		return ""
	}
	stderr = &testutil.SyncBuffer{}
	out := make(chan result, 1)
	go func() {
		var stdout testutil.SyncBuffer
		code := run(args, getenv, strings.NewReader(""), &stdout, stderr)
		out <- result{stdout.String(), stderr.String(), code}
	}()
	return stderr, out
}

// waitFor waits until stderr says want; the bound guards a hang, it
// measures no speed.
func waitFor(t *testing.T, stderr *testutil.SyncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q:\n%s", want, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sbf exec to a sandbox still booting says at once that it waits and for
// what, and runs the command once the boot is over.
func TestExecToABootingSandboxSaysItWaitsThenRuns(t *testing.T) {
	t.Parallel()
	dir, world, instance := bootingSandbox(t)
	stderr, done := sbfAsync(t, "-C", dir, "exec", "api", "--", "echo", "hi")
	waitFor(t, stderr, "sbf: sandbox api is still booting (held by SBF_SIM_BOOT until FinishBoot); "+
		"the command runs once its guest is ready")
	world.FinishBoot(instance)
	if r := <-done; r.code != 0 || r.stdout != "hi\n" {
		t.Errorf("exec: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A sandbox that stops while sbf exec waits for its boot: exit 125 with
// the cause, as docker's own failures.
func TestExecToASandboxThatStopsBootingExits125(t *testing.T) {
	t.Parallel()
	dir, world, instance := bootingSandbox(t)
	stderr, done := sbfAsync(t, "-C", dir, "exec", "api", "--", "true")
	waitFor(t, stderr, "still booting")
	world.ForceStop(context.Background(), instance)
	if r := <-done; r.code != 125 || !strings.Contains(r.stderr, "sandbox api is not ready: its VM is stopped") {
		t.Errorf("exec: exit %d, stderr %q", r.code, r.stderr)
	}
}

// status says booting, not running, while the guest boots, with AGE from
// the VM when the record lost its creation time.
func TestStatusSaysBootingWithTheVMsAge(t *testing.T) {
	dir, _, _ := bootingSandbox(t)
	r := sbf(t, nil, "-C", dir, "status", "--json")
	if !strings.Contains(r.stdout, `"live_status": "booting"`) || !strings.Contains(r.stdout, `"created_at"`) ||
		!strings.Contains(r.stdout, "recorded running, but the instance is booting") {
		t.Errorf("status: %s%s", r.stdout, r.stderr)
	}
}

// destroy --force deletes at once: the plan says so, and the VM is halted
// at once and deleted, never stopped cleanly.
func TestDestroyForce(t *testing.T) {
	dir := simDir(t, oneSimSandbox)
	if r := sbf(t, nil, "-C", dir, "up", "api", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	world := inProcessSimWorld(t, dir)
	before, _ := sim.ReadLog(world)
	r := sbf(t, nil, "-C", dir, "destroy", "api", "--force", "--auto-approve")
	if r.code != 0 || !strings.Contains(r.stdout, "no lease (destroyed); forced: deleted without a clean stop") {
		t.Errorf("destroy --force: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ops, _ := sim.ReadLog(world)
	var did []string
	for _, o := range ops[len(before):] {
		if o.Mutating() {
			did = append(did, o.Op)
		}
	}
	if got := strings.Join(did, " "); got != "force-stop delete" {
		t.Errorf("destroy --force did %q", got)
	}
}

// What a wait names (a lock holder's command from its note, a boot step
// from Lima's host agent log) reaches the terminal escaped.
func TestWaitLinesAreEscaped(t *testing.T) {
	var out strings.Builder
	waitLines(&out)("waiting for the lock x, held by \"\x1b]0;pwned\x07sbf\" (pid 1)")
	if strings.ContainsAny(out.String(), "\x1b\x07") || !strings.HasPrefix(out.String(), "sbf: waiting for the lock x") {
		t.Errorf("line: %q", out.String())
	}
}
