package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/hostcap"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

const oneSandbox = `[vm]
driver = "kubevirt"
cpus = 1
memory_gib = 1
disk_gib = 5
ttl = "1h"

[sandboxes.api]
`

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// workspace is a workspace whose sandboxes are VMs in a namespace of the test cluster,
// converged by the engine through the plugin.
type workspace struct {
	space
	root  string
	clock *clock.Fake
	eng   *reconcile.Engine
}

func newWorkspace(t *testing.T, s space, kubeconfig string) *workspace {
	t.Helper()
	w := &workspace{space: s, root: t.TempDir(), clock: clock.NewFake(t0)}
	if kubeconfig == "" {
		kubeconfig = s.kubeconfig
	}
	if err := os.WriteFile(filepath.Join(w.root, spec.FileName), []byte(oneSandbox), 0o644); err != nil {
		t.Fatal(err)
	}
	build := factory(t, s.env(t, w.clock, kubeconfig))
	w.eng = &reconcile.Engine{Clock: w.clock, HostDir: t.TempDir(), Parallelism: 2,
		Who:   flock.Holder{Command: "test", PID: os.Getpid()},
		Probe: func(string) hostcap.Capacity { return tiny }, // a cluster VM takes nothing of this host's
		Drivers: func(name string, r *spec.Resolved) (reconcile.Driver, error) {
			return build(name, r.Root)
		}}
	return w
}

// tiny is a laptop too small for the workspace's VMs, which the cluster runs instead.
var tiny = func() hostcap.Capacity {
	mem, disk := 0.25, 1.0
	return hostcap.Capacity{CPUs: 1, MemoryAvailableGiB: &mem, DiskFreeGiB: &disk}
}()

func (w *workspace) converge(opts reconcile.Options) (*reconcile.Result, error) {
	return w.eng.Apply(context.Background(), spec.Options{Root: w.root, Host: spec.Host{OS: "linux", Arch: "amd64"}}, opts)
}

// apply is `sbf apply --auto-approve`; reconcile one pass of the loop.
func (w *workspace) apply() (*reconcile.Result, error) {
	return w.converge(reconcile.Options{Intent: reconcile.Renew{All: true}})
}
func (w *workspace) reconcile() (*reconcile.Result, error) {
	return w.converge(reconcile.Options{Intent: reconcile.Reconcile{}})
}

func (w *workspace) vms(t *testing.T) []kv.VirtualMachine {
	t.Helper()
	var list kv.VirtualMachineList
	if err := w.admin.List(context.Background(), &list, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestTheLoopExpiresAndDeletesTheVM(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, newSpace(t, quick), "")
	res, err := w.apply()
	if err != nil {
		t.Fatal(err)
	}
	vms := w.vms(t)
	if len(vms) != 1 || vms[0].Labels[driver.LabelWorkspace] != res.Resolved.WorkspaceID ||
		vms[0].Labels[driver.LabelSandbox] != "api" {
		t.Fatalf("after apply: %+v", vms)
	}
	// The engine records the lease end on the VM (drivers.LeaseRecorder), for whoever looks at
	// the cluster.
	if got, want := vms[0].Annotations[driver.AnnotationLeaseEnd], t0.Add(time.Hour).Format(time.RFC3339); got != want {
		t.Errorf("lease annotation = %q, want %q", got, want)
	}
	var vmi kv.VirtualMachineInstance
	if err := w.admin.Get(context.Background(), client.ObjectKeyFromObject(&vms[0]), &vmi); err != nil ||
		vmi.Status.Phase != kv.Running {
		t.Fatalf("after apply the VMI is %q (%v); want it running", vmi.Status.Phase, err)
	}
	w.clock.Advance(59 * time.Minute)
	if _, err := w.reconcile(); err != nil || len(w.vms(t)) != 1 {
		t.Fatalf("a pass inside the lease: %v, %d VMs", err, len(w.vms(t)))
	}
	w.clock.Advance(2 * time.Minute)
	res, err = w.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if vms := w.vms(t); len(vms) != 0 {
		t.Errorf("the lease ended but %d VMs remain", len(vms))
	}
	if rec, _ := res.Recorded("api"); rec.Phase != state.Expired {
		t.Errorf("phase %s; want expired", rec.Phase)
	}
}

func TestALostStateFileIsRebuiltFromLabels(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, newSpace(t, quick), "")
	if _, err := w.apply(); err != nil {
		t.Fatal(err)
	}
	before := w.vms(t)
	if err := os.RemoveAll(filepath.Join(w.root, spec.Dir)); err != nil {
		t.Fatal(err)
	}
	res, err := w.apply()
	if err != nil {
		t.Fatal(err)
	}
	after := w.vms(t)
	if len(after) != 1 || after[0].UID != before[0].UID {
		t.Fatalf("the VM was replaced: %v → %v", before, after)
	}
	if s := res.Plan.Summary(); s.Add != 0 || s.Destroy != 0 {
		t.Errorf("with the state lost, the plan adds %d and destroys %d; want the VM found again", s.Add, s.Destroy)
	}
	if rec, ok := res.Recorded("api"); !ok || rec.Phase != state.Running {
		t.Errorf("rebuilt record: %+v", rec)
	}
}

func TestAForeignVMIsNeverTouched(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	w := newWorkspace(t, s, "")
	s.addForeign(t, "default")
	if _, err := w.apply(); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(2 * time.Hour)
	if _, err := w.reconcile(); err != nil {
		t.Fatal(err)
	}
	if !s.foreignExists(t, "default") {
		t.Error("the loop changed or deleted a VM sbf did not make")
	}
	if vms := w.vms(t); len(vms) != 1 || vms[0].Name != "default" {
		t.Errorf("VMs left: %d", len(vms))
	}
}

// A VM named exactly as sbf names the sandbox's, but made by someone else, is neither
// adopted nor changed: the create fails and says so.
func TestAVMNamedLikeSbfsButNotItsIsRefused(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	w := newWorkspace(t, s, "")
	_, id, err := spec.WorkspaceIdentity(w.root)
	if err != nil {
		t.Fatal(err)
	}
	name := driver.ObjectName(drivers.InstanceName(id, "api"))
	s.addForeign(t, name)
	if _, err := w.apply(); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("apply over a lookalike: %v; want the create refused", err)
	}
	w.clock.Advance(2 * time.Hour)
	w.reconcile()
	if !s.foreignExists(t, name) {
		t.Error("sbf changed or deleted a VM it did not make")
	}
}

func TestAnRBACRefusalIsCodedWithNextSteps(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	nobody := kubetest.Kubeconfig(t, cluster.User(t, "nobody", s.ns, nil))
	w := newWorkspace(t, s, nobody)
	_, err := w.apply()
	c := coded.Of(err, coded.Unknown)
	steps, _ := c.Details["next_steps"].([]string)
	if c.Code != coded.BackendUnavailable || c.Details["probable_cause"] != "rbac_forbidden" || len(steps) == 0 ||
		!strings.Contains(steps[0], "deploy/kubevirt/rbac.yaml") {
		t.Fatalf("apply as a user with no rights: %#v", c)
	}
	if !strings.Contains(c.Message, "forbidden") {
		t.Errorf("the message hides the refusal: %s", c.Message)
	}
	var u interface{ Coded() *coded.Error }
	if !errors.As(err, &u) {
		t.Error("the refusal is not a coded error on sbf's side of the plugin")
	}
	if vms := w.vms(t); len(vms) != 0 {
		t.Errorf("a refused apply left VMs: %v", vms)
	}
}
