package integration

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

const shortLease = `[vm]
driver = "kubevirt"
cpus = 1
memory_gib = 1
disk_gib = 5
ttl = "20s"

[sandboxes.api]
`

// lateBound is how long after its lease end a VM may still be there: the annotation has
// whole seconds (rounded up), the controller wakes at the end itself.
const lateBound = 2 * time.Second

// `sbf apply` killed (SIGKILL: a laptop whose lid closed) at every step of a create leaves
// no VM past its lease: the VM carries its lease end from its first write, and the shipped
// controller (its default grace for VMs without one, 15 minutes, far past this test) deletes
// it within lateBound of that end. Before the fix the annotation came only after a run in
// which the VM reached Running: killed earlier, the VM kept running for good.
func TestAKilledApplyLeavesNoVMPastItsLease(t *testing.T) {
	t.Parallel()
	steps := []struct {
		name string
		// reached says whether the create got to the step, from the cluster, sbf's state
		// and what sbf said.
		reached func(t *testing.T, s space, ws, said string) bool
	}{
		{"before the object", func(t *testing.T, s space, ws, _ string) bool { return recorded(t, ws, `"creating"`) }},
		{"after the object", func(t *testing.T, s space, _, _ string) bool { return len(vmsIn(t, s)) == 1 }},
		// sbf waits for the boot (the stand-in's VMI comes after StartDelay and runs at once,
		// so a VMI seen not running was a window of milliseconds, missed under load).
		{"during boot", func(t *testing.T, s space, _, said string) bool {
			vmi := vmiIn(t, s)
			return strings.Contains(said, "waiting for KubeVirt") && len(vmsIn(t, s)) == 1 &&
				(vmi == nil || vmi.Status.Phase != kv.Running)
		}},
		{"after Running", func(t *testing.T, s space, _, _ string) bool {
			vmi := vmiIn(t, s)
			return vmi != nil && vmi.Status.Phase == kv.Running
		}},
	}
	sbf := sbfBinary(t)
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			t.Parallel()
			s := newSpace(t, fakevirt.Options{StartDelay: 4 * time.Second, StopDelay: 50 * time.Millisecond})
			// sbf reaches the API server through a relay the test can cut, so that a kill
			// "before the object" is one: nothing sbf sends after the cut arrives.
			host, err := url.Parse(cluster.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			relay := newPartition(t, host.Host)
			via := rest.CopyConfig(cluster.Config)
			via.Host = "https://" + relay.addr
			startController(t, s)

			ws, home := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, ".sandboxforge.toml"), []byte(shortLease), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sbf, "-C", ws, "apply", "--auto-approve")
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + kubetest.Kubeconfig(t, via),
				"SBF_KUBEVIRT_NAMESPACE=" + s.ns, "SBF_KUBEVIRT_POLL=50ms"}
			out := &testutil.SyncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			started := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			waitFor(t, "sbf apply to get "+step.name, func() bool {
				select {
				case <-exited:
					t.Fatalf("sbf apply ended before %s:\n%s", step.name, out)
				default:
				}
				return step.reached(t, s, ws, out.String())
			})
			if step.name == "before the object" {
				relay.cut.Store(true)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-exited
			killed := time.Now()
			vms := vmsIn(t, s)
			t.Logf("killed sbf apply %s after its start, %s; %d VM", killed.Sub(started).Round(time.Millisecond),
				step.name, len(vms))
			if step.name != "before the object" && len(vms) != 1 {
				t.Fatalf("%d VMs when sbf was killed %s", len(vms), step.name)
			}
			end := started.Add(20 * time.Second)
			for _, vm := range vms {
				raw := vm.Annotations[driver.AnnotationLeaseEnd]
				at, err := time.Parse(time.RFC3339, raw)
				if err != nil {
					t.Fatalf("killed %s, the VM carries no lease end (%s=%q)", step.name, driver.AnnotationLeaseEnd, raw)
				}
				if at.Before(started.Truncate(time.Second)) || at.After(killed.Add(20*time.Second+time.Second)) {
					t.Fatalf("the VM's lease end %s is not its lease's (sbf started at %s, ttl 20s)", raw, started)
				}
				end = at
			}
			waitUntil(t, end.Add(lateBound+3*time.Second), "no VM "+step.name, func() bool { return len(vmsIn(t, s)) == 0 })
			if gone := time.Now(); len(vms) > 0 {
				t.Logf("no VM left %s after its lease end", gone.Sub(end).Round(time.Millisecond))
				if late := gone.Sub(end); late > lateBound {
					t.Errorf("the VM was there %s after its lease end; want within %s", late, lateBound)
				}
			}
			// Nor does one appear later: a request in flight when sbf died is no exception.
			time.Sleep(time.Until(end.Add(lateBound)))
			if vms := vmsIn(t, s); len(vms) != 0 {
				t.Errorf("%d VMs %s after the lease end", len(vms), lateBound)
			}
		})
	}
}

// startController runs the shipped lease controller on namespace s.ns until the test ends.
func startController(t *testing.T, s space, args ...string) *testutil.SyncBuffer {
	t.Helper()
	cmd := exec.Command(plugin, append([]string{"controller", "--namespaces", s.ns}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("the controller said:\n%s", out)
		}
	})
	return out
}

// waitUntil polls cond until it holds or deadline passes.
func waitUntil(t *testing.T, deadline time.Time, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s by %s", what, deadline.Format(time.RFC3339Nano))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// vmsIn lists the VMs of s that are not being deleted.
func vmsIn(t *testing.T, s space) []kv.VirtualMachine {
	t.Helper()
	var out []kv.VirtualMachine
	for _, vm := range (&workspace{space: s}).vms(t) {
		if vm.DeletionTimestamp == nil {
			out = append(out, vm)
		}
	}
	return out
}

// vmiIn is the one VMI of s, nil when there is none.
func vmiIn(t *testing.T, s space) *kv.VirtualMachineInstance {
	t.Helper()
	var list kv.VirtualMachineInstanceList
	if err := s.admin.List(context.Background(), &list, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	return &list.Items[0]
}

// recorded says whether sbf's state for the workspace at ws (state.json or its journal)
// holds text.
func recorded(t *testing.T, ws, text string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ws, ".sandboxforge", "*"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), text) {
			return true
		}
	}
	return false
}
