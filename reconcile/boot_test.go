package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/progress"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/state"
)

const oneSandbox = `
[vm]
driver = "sim"
[sandboxes.api]
`

// hang guards a step that the old code never finished; it measures no
// speed.
const hang = 2 * time.Minute

// cutShortCreate is `sbf apply` cut short while its VM boots, as a killed
// sbf or a start past its timeout leaves it (a cancelled run deletes what
// it was making, issue 40.1): the VM goes on booting (SBF_SIM_BOOT holds
// it), its record says failed.
func cutShortCreate(t *testing.T, h *harness) {
	t.Helper()
	h.boot = "api=timeout" // the start fails, the VM boots on: as a killed sbf leaves it
	if _, err := h.eng.Apply(context.Background(), h.ws(), Options{Intent: Renew{All: true}}); err == nil {
		t.Fatal("the cut-short apply succeeded")
	}
	h.boot = "api=hold"
	if got := h.world()[h.instance("api")].Status; got != drivers.Booting {
		t.Fatalf("the VM is %s, want booting", got)
	}
}

func (h *harness) simDriver() *sim.Driver {
	h.t.Helper()
	d, err := sim.New(sim.Options{Dir: h.simDir})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// The next apply after a create cut short does not call the half-booted
// VM healthy ("No changes" and "recorded failed, but ... is running as
// desired"): it plans the start the create did not finish, status says
// booting and when the VM was made, and the apply finishes the start.
func TestACreateCutShortIsFinishedNotCalledHealthy(t *testing.T) {
	h := newHarness(t, oneSandbox)
	cutShortCreate(t, h)
	res, err := h.planWith(Options{Intent: Renew{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	if len(p.Actions) != 1 || p.Actions[0].Kind != plan.Start ||
		p.Actions[0].Cause != "booting: its guest is not ready yet" || len(p.Refresh) != 0 {
		t.Fatalf("plan after a create cut short: %+v, refresh %+v", p.Actions, p.Refresh)
	}
	rows := res.Status()
	if len(rows) != 1 || rows[0].Live != "booting" || !strings.Contains(rows[0].Drift, "still booting") ||
		rows[0].CreatedAt == nil || !rows[0].CreatedAt.Equal(t0) {
		t.Errorf("status: %+v", rows)
	}
	h.eng.Events = func(ev Event) {
		if ev.Kind == plan.Start && strings.Contains(ev.Message, "still booting") {
			h.simDriver().FinishBoot(h.instance("api")) // the guest finishes booting while the start waits
		}
	}
	res = h.mustApply()
	if rec := res.recorded.Sandboxes["api"]; rec.Phase != state.Running || rec.LastError != "" {
		t.Errorf("after the apply: %+v", rec)
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("converged, yet: %+v %+v", p.Actions, p.Refresh)
	}
}

// next is the next line a wait says; the command must not end first.
func next(t *testing.T, said <-chan string, done <-chan error) string {
	t.Helper()
	select {
	case msg := <-said:
		return msg
	case err := <-done:
		t.Fatalf("the command ended without a word of its wait: %v", err)
	case <-time.After(hang):
		t.Fatal("no line")
	}
	return ""
}

// A command to a booting sandbox waits for its boot, saying so at once and
// at every progress.Every, then runs.
func TestACommandWaitsForTheBootAndSaysSo(t *testing.T) {
	h := newHarness(t, oneSandbox)
	cutShortCreate(t, h)
	said := make(chan string, 16)
	ctx := progress.WithListener(context.Background(), func(msg string) { said <- msg })
	before := h.clock.Waiters()
	done := make(chan error, 1)
	var res drivers.ExecResult
	go func() {
		var err error
		res, err = h.target(t, "api").Exec(ctx, execReq("echo hi"))
		done <- err
	}()
	if msg := next(t, said, done); !strings.Contains(msg, "sandbox api is still booting (held by SBF_SIM_BOOT") {
		t.Errorf("first line: %q", msg)
	}
	for h.clock.Waiters() < before+2 { // the beat and the next look are armed
		time.Sleep(time.Millisecond)
	}
	h.clock.Advance(progress.Every)
	if msg := next(t, said, done); !strings.Contains(msg, "still waiting for sandbox api to boot (15s so far)") {
		t.Errorf("beat: %q", msg)
	}
	h.simDriver().FinishBoot(h.instance("api"))
	h.clock.Advance(sandbox.BootPoll)
	select {
	case err := <-done:
		if err != nil || strings.TrimSpace(res.Stdout) != "hi" {
			t.Errorf("exec after the boot: %+v, %v", res, err)
		}
	case <-time.After(hang):
		t.Fatal("the command did not run once the boot was over")
	}
}

// A sandbox that stops while a command waits for its boot fails the
// command with INSTANCE_NOT_READY, saying so (sbf exec exits 125).
func TestACommandWhoseSandboxStopsWhileBootingFails(t *testing.T) {
	h := newHarness(t, oneSandbox)
	cutShortCreate(t, h)
	said := make(chan string, 16)
	ctx := progress.WithListener(context.Background(), func(msg string) { said <- msg })
	done := make(chan error, 1)
	go func() {
		_, err := h.target(t, "api").Exec(ctx, execReq("echo hi"))
		done <- err
	}()
	next(t, said, done)
	h.simDriver().ForceStop(context.Background(), h.instance("api"))
	for {
		h.clock.Advance(sandbox.BootPoll)
		select {
		case err := <-done:
			if c := coded.Of(err, ""); c.Code != coded.InstanceNotReady || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("exec: %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// destroy --force deletes without the clean stop; without it, the VM is
// stopped cleanly first.
func TestDestroyForceSkipsTheCleanStop(t *testing.T) {
	for _, force := range []bool{false, true} {
		h := newHarness(t, oneSandbox)
		h.mustApply()
		mark := h.logLen()
		res := h.mustApplyWith(Options{Intent: Destroy{Sandboxes: []string{"api"}, Force: force}})
		_, ops := h.mutations(mark)
		var done []string
		for _, o := range ops[mark:] {
			if o.Mutating() {
				done = append(done, o.Op)
			}
		}
		a := res.Plan.Actions[0]
		switch got := strings.Join(done, " "); {
		case force && (got != "force-stop delete" || !a.Force || !strings.Contains(a.Cause, "forced")):
			t.Errorf("destroy --force: ops %q, action %+v", got, a)
		case !force && (got != "stop delete" || a.Force):
			t.Errorf("destroy: ops %q, action %+v", got, a)
		}
	}
}

// A VM still booting is deleted without waiting for its boot, forced or not.
func TestDestroyOfABootingVMDoesNotWaitForItsBoot(t *testing.T) {
	h := newHarness(t, oneSandbox)
	cutShortCreate(t, h)
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = h.converge(Options{Intent: Destroy{Sandboxes: []string{"api"}}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hang):
		t.Fatal("destroy waited for the boot of the VM it deletes")
	}
	if a := res.Plan.Actions[0]; !a.Force || !strings.Contains(a.Cause, "still booting") {
		t.Errorf("action: %+v", a)
	}
	if _, ok := h.world()[h.instance("api")]; ok {
		t.Error("the VM is still there")
	}
}
