package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/state"
)

// forcedGuestWait bounds what a forced removal runs in the guest first.
const forcedGuestWait = 5 * time.Second

// endTasks stops the sandbox's running background tasks before its VM
// goes (in a VM they would die with it; the sim runs them on the host),
// saves the end of each task's output (its log goes with the VM) and
// records why they ended. Reading the output is best effort: a VM that
// does not answer is deleted all the same.
func (e *Executor) endTasks(ctx context.Context, drv Driver, a plan.Action) error {
	var running []int
	var tasks []*state.Task
	all := e.Record.TasksOf(a.Sandbox)
	for _, t := range all {
		if t.Instance != "" && t.Instance != a.Instance {
			continue
		}
		tasks = append(tasks, t)
		if !t.Finished() {
			running = append(running, t.PID)
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	how := map[plan.Kind]string{plan.Delete: "destroyed", plan.Expire: "expired"}[a.Kind]
	now := e.Clock.Now().UTC()
	saved := map[string]*state.SavedOutput{}
	if a.Force && a.Kind != plan.Expire {
		// A removal asked to be forced (destroy --force, a booting VM)
		// gives the guest a moment, not a minute: a guest that does not
		// answer (still booting, hung) keeps nothing waiting. An expiry
		// saves the tasks' output as before.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, forcedGuestWait)
		defer cancel()
	}
	if x := drivers.CapabilitiesOf(drv).Exec; x != nil {
		run := func(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
			return x.Exec(ctx, a.Instance, req)
		}
		if len(running) > 0 {
			cmd := "true"
			for _, pid := range running {
				cmd += fmt.Sprintf("; kill -KILL -%d 2>/dev/null", pid)
			}
			run(ctx, drivers.ExecRequest{Command: cmd, Timeout: time.Minute}) // best effort: the VM goes next
		}
		for _, t := range tasks {
			if t.SavedOutput == nil && t.LogPath != "" {
				if out, err := sandbox.SaveOutput(ctx, run, t, "the sandbox was "+how, now); err == nil {
					saved[t.ID] = out
				}
			}
		}
	}
	return e.Record.Write(func(tx *state.Tx) {
		for _, seen := range all {
			t := tx.Task(seen.ID)
			if t == nil {
				continue
			}
			if out := saved[t.ID]; out != nil {
				t.SavedOutput = out
			}
			if !t.Finished() {
				t.Status, t.FinishedAt, t.ErrorMessage = "stopped", &now, "the sandbox was "+how
			}
		}
	})
}
