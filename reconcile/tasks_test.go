package reconcile

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Background tasks run detached in the guest (real processes on the sim),
// keep their record in the state, and report status and output.
func TestBackgroundTasks(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	ctx := context.Background()
	done, err := h.eng.Tasks(h.ws()).Start(ctx, "api", "echo $WORD; echo oops >&2; exit 3", "",
		map[string]string{"WORD": "hello"})
	if err != nil || done.PID == 0 || !strings.HasPrefix(done.ID, "task_") || len(done.ID) != 17 {
		t.Fatalf("start: %+v %v", done, err)
	}
	var st = done
	for deadline := time.Now().Add(10 * time.Second); st.Status == "running" &&
		time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err = h.eng.Tasks(h.ws()).Get(ctx, done.ID); err != nil {
			t.Fatal(err)
		}
	}
	if st.Status != "failed" || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("finished task: %+v", st)
	}
	_, logs, _ := h.eng.Tasks(h.ws()).Logs(ctx, done.ID, 0)
	if logs != "hello\noops\n" {
		t.Errorf("logs = %q", logs)
	}
	var ce *coded.Error
	if _, err := h.eng.Tasks(h.ws()).Stop(ctx, done.ID, false); !errors.As(err, &ce) ||
		ce.Code != sandbox.CodeTaskAlreadyFinished {
		t.Errorf("stop of a finished task: %v", err)
	}
	long, err := h.eng.Tasks(h.ws()).Start(ctx, "api", "sleep 60 & sleep 60", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := h.eng.Tasks(h.ws()).Stop(ctx, long.ID, false)
	if err != nil || stopped.Status != "stopped" || *stopped.ExitCode != -15 {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	// The whole group got the signal: nothing of the task is left.
	res, _ := h.target(t, "api").Exec(ctx, execReq(fmtPIDGroup(long.PID)))
	if strings.TrimSpace(res.Stdout) != "0" {
		t.Errorf("processes left in the task's group: %q", res.Stdout)
	}
	if _, err := h.eng.Tasks(h.ws()).Get(ctx, "task_000000000000"); !errors.As(err, &ce) ||
		ce.Code != sandbox.CodeTaskNotFound {
		t.Errorf("unknown task: %v", err)
	}
	list, _ := h.eng.Tasks(h.ws()).List()
	if len(list) != 2 {
		t.Errorf("recorded tasks: %d", len(list))
	}
}

// A sandbox's tasks end with it: when its lease expires, the processes are
// stopped and the records say why.
func TestTasksEndWithTheirSandbox(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\nttl = \"10m\"\n")
	h.mustApply()
	ctx := context.Background()
	task, err := h.eng.Tasks(h.ws()).Start(ctx, "api", "sleep 60", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(11 * time.Minute)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	st, _ := h.eng.Tasks(h.ws()).Get(ctx, task.ID)
	if st.Status != "stopped" || !strings.Contains(st.ErrorMessage, "expired") {
		t.Errorf("task after expiry: %+v", st)
	}
	// Killed at once, but a loaded machine may reap them a moment later.
	var out []byte
	for range 20 {
		if out, _ = exec.Command("sh", "-c", fmtPIDGroup(task.PID)).Output(); strings.TrimSpace(string(out)) == "0" {
			return
		}
	}
	t.Errorf("the task's processes outlived the sandbox by 6 s: %s", out)
}
