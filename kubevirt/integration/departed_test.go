package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// A VM the lease controller deletes is an expiry to the sbf that made it: sbf status shows
// the sandbox expired, not "recorded running, but the instance is missing", and sbf history
// has one line for it (door cluster, tool expire, at the Event's time, naming the
// controller), however many status and apply runs see it. The VM's lease end is moved
// earlier on the cluster (an operator's edit; a cluster clock ahead of the laptop's), so
// this host's clock says the lease is live: only the controller's Event tells.
func TestAClusterExpiryReachesStatusAndHistory(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sbf := sbfBinary(t)
	ws, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".sandboxforge.toml"), []byte(oneSandbox), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(sbf, append([]string{"-C", ws}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + s.kubeconfig,
			"SBF_KUBEVIRT_NAMESPACE=" + s.ns, "SBF_KUBEVIRT_POLL=50ms"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("sbf %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	run("apply", "--auto-approve")
	vms := vmsIn(t, s)
	if len(vms) != 1 {
		t.Fatalf("after sbf apply: %d VMs", len(vms))
	}
	ctl := startController(t, s)
	vm := vms[0]
	patch := client.MergeFrom(vm.DeepCopy())
	vm.Annotations[driver.AnnotationLeaseEnd] = time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	if err := s.admin.Patch(context.Background(), &vm, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the controller to delete the VM", func() bool { return len(vmsIn(t, s)) == 0 })
	waitFor(t, "the controller's Event", func() bool { return eventsOn(t, s, vm.Name)[driver.ReasonLeaseExpired] != nil })
	ev := eventsOn(t, s, vm.Name)[driver.ReasonLeaseExpired]

	for range 2 {
		row := statusRow(t, run("status", "--all", "--json"), "api")
		if row.Phase != "expired" || row.Drift != "" || row.Departed == nil ||
			row.Departed.Reason != driver.ReasonLeaseExpired || !row.Departed.At.Equal(ev.LastTimestamp.Time) {
			t.Fatalf("sbf status after the cluster expired the VM: %+v (departed %+v); want expired by the Event of %s",
				row, row.Departed, ev.LastTimestamp.UTC())
		}
	}
	if out := run("status"); strings.Contains(out, "missing") {
		t.Errorf("sbf status calls the expired sandbox's VM missing:\n%s", out)
	}
	expiries := func() []historyEvent {
		var h struct{ Events []historyEvent }
		out := run("history", "--json", "--limit", "0")
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("sbf history --json: %v\n%s", err, out)
		}
		var out2 []historyEvent
		for _, e := range h.Events {
			if e.Door == "cluster" {
				out2 = append(out2, e)
			}
		}
		return out2
	}
	lines := expiries()
	if len(lines) != 1 || lines[0].Tool != "expire" || lines[0].Sandbox != "api" ||
		!lines[0].Time.Equal(ev.LastTimestamp.Time) ||
		!strings.Contains(lines[0].Detail, "LeaseExpired by "+driver.ControllerComponent) {
		t.Fatalf("sbf history's cluster lines: %+v; want one expiry of api at %s by the controller", lines,
			ev.LastTimestamp.UTC())
	}
	t.Logf("history: %s %s %s %s", lines[0].Time.Format(time.RFC3339), lines[0].Door, lines[0].Tool, lines[0].Detail)

	// sbf apply renews the lease and makes the sandbox anew; the expiry stays one line, and
	// the old VM's Event says nothing of the new one.
	run("apply", "--auto-approve")
	if vms := vmsIn(t, s); len(vms) != 1 {
		t.Fatalf("after the second sbf apply: %d VMs", len(vms))
	}
	run("status")
	if lines := expiries(); len(lines) != 1 {
		t.Errorf("after status twice and apply: %d cluster lines in the history, want 1: %+v", len(lines), lines)
	}
	if row := statusRow(t, run("status", "--all", "--json"), "api"); row.Phase != "running" || row.Departed != nil {
		t.Errorf("the new VM's status: %+v", row)
	}
	if t.Failed() {
		t.Logf("the controller said:\n%s", ctl)
	}
}

type historyEvent struct {
	Time                        time.Time
	Door, Tool, Sandbox, Detail string
}

type statusLine struct {
	Name, Phase, Drift string
	Departed           *struct {
		Reason, By string
		At         time.Time
	}
}

// statusRow is sandbox name's row of sbf status --json.
func statusRow(t *testing.T, out, name string) statusLine {
	t.Helper()
	var st struct{ Sandboxes []statusLine }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("sbf status --json: %v\n%s", err, out)
	}
	for _, r := range st.Sandboxes {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("sbf status --json has no %s:\n%s", name, out)
	return statusLine{}
}
