package v1import

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

const v1Now = "2026-03-26T12:00:00Z"

// world is two workspaces whose VMs v1 made on the sim (standing in for
// lima and hyperv), sbf's host state, and v1's database about them.
type world struct {
	wsA, wsB, db, host string
	env                map[string]string // the process environment the drivers see
}

// src maps both of v1's backends to the sim.
func (w world) src() Source {
	return Source{DB: w.db, Drivers: map[string]string{"lima": sim.Name, "hyperv": sim.Name}}
}

// engine is sbf's engine as of now (RFC 3339) on this world's host state.
func (w world) engine(t *testing.T, now string) *reconcile.Engine {
	t.Helper()
	at, err := time.Parse(time.RFC3339, now)
	if err != nil {
		t.Fatal(err)
	}
	c := clock.Fixed{T: at}
	env := drivers.Env{Getenv: func(k string) string { return w.env[k] }, Clock: c, StateDir: w.host,
		HostOS: runtime.GOOS, HostArch: runtime.GOARCH, HostExec: true}
	return &reconcile.Engine{Clock: c, Drivers: reconcile.Backends(context.Background(), env), HostDir: w.host}
}

// ws is how a workspace of this world is loaded.
func (w world) ws(root string) spec.Options {
	return spec.Options{Root: root, Host: spec.CurrentHost()}
}

// options are Run's, with v1's leaked VMs deleted or not.
func options(deleteLeaked bool) Options {
	return Options{DeleteLeaked: deleteLeaked, Workspace: spec.Options{Host: spec.CurrentHost()}}
}

// tempDir is a fresh folder under its real name, as the sim keys its worlds.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newWorld(t *testing.T, schema string) world {
	t.Helper()
	w := world{wsA: tempDir(t), wsB: tempDir(t), host: tempDir(t), env: map[string]string{}}
	for root, names := range map[string][]string{
		w.wsA: {"agent-00000001", "agent-00000003", "agent-unrelated"},
		w.wsB: {"agent-00000002"},
	} {
		d := w.sim(t, root)
		for _, n := range names {
			s := drivers.Spec{Name: n, CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
			if err := d.Create(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if err := d.Start(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.db = v1test.Write(t, t.TempDir(), v1test.Concat([]string{schema}, v1test.Indexes),
		v1test.Row{ID: "inst_00000001", Backend: "lima", Root: w.wsA, Status: "running", Created: "2026-03-26T11:00:00Z",
			Expires: "2026-03-26T12:30:00Z", Owner: "local", Name: "agent-00000001", Ready: 1, Docker: "docker"},
		v1test.Row{ID: "inst_00000002", Backend: "hyperv", Root: w.wsB, Status: "creating", Created: "2026-03-26T11:59:00Z",
			Expires: "2026-03-26T12:29:00Z", Name: "agent-00000002"},
		v1test.Row{ID: "inst_00000003", Backend: "lima", Root: w.wsA, Status: "expired", Created: "2026-03-26T08:00:00Z",
			Expires: "2026-03-26T08:30:00Z", Name: "agent-00000003"},
		v1test.Row{ID: "inst_00000004", Backend: "lima", Root: w.wsA, Status: "running", Created: "2026-03-26T11:00:00Z",
			Expires: "2026-03-26T13:00:00Z", Name: "agent-00000004"},
		v1test.Row{ID: "inst_00000005", Backend: "docker", Root: w.wsA, Status: "running", Created: "2026-03-26T11:00:00Z",
			Expires: "2026-03-26T13:00:00Z", Name: "agent-00000005"},
	)
	return w
}

// sim is the sim's world of a workspace, as sbf's drivers see it.
func (w world) sim(t *testing.T, root string) *sim.Driver {
	t.Helper()
	d, err := sim.New(sim.Options{Dir: sim.WorldDir(w.host, root)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// vms lists a workspace's sim world by name.
func (w world) vms(t *testing.T, root string) map[string]drivers.Instance {
	t.Helper()
	list, err := w.sim(t, root).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]drivers.Instance{}
	for _, i := range list {
		out[i.Name] = i
	}
	return out
}

func (w world) names(t *testing.T, root string) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(w.vms(t, root)))
}

// classes is each lease's class and action, in the report's order.
func classes(entries []Entry) string {
	var parts []string
	for _, e := range entries {
		parts = append(parts, e.InstanceID+"="+string(e.Class)+"/"+string(e.Action))
	}
	return strings.Join(parts, " ")
}

const wantClasses = "inst_00000001=import/adopt inst_00000002=import/adopt inst_00000003=leaked/ " +
	"inst_00000005=skip/ inst_00000004=gone/"

// files are what an import writes in a workspace, and their contents.
func files(roots ...string) map[string]string {
	out := map[string]string{}
	for _, root := range roots {
		for _, f := range []string{spec.OverridesFile, "state.json"} {
			if data, err := os.ReadFile(filepath.Join(root, spec.Dir, f)); err == nil {
				out[filepath.Join(root, f)] = string(data)
			}
		}
	}
	return out
}

// checkAdopted says whether sandbox holds VM vm of the workspace at root:
// recorded in its state file as running, and labelled as its owner.
func (w world) checkAdopted(t *testing.T, root, sandbox, vm string) {
	t.Helper()
	f, err := state.Read(filepath.Join(root, spec.Dir), root, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := f.Sandboxes[sandbox]
	if rec == nil || rec.Instance != vm || rec.Driver != sim.Name || rec.Phase != state.Running {
		t.Errorf("%s: state record %+v (want VM %s, running)", sandbox, rec, vm)
	}
	_, id, err := spec.WorkspaceIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	if inst := w.vms(t, root)[vm]; inst.Status != drivers.Running || !inst.Label.OwnedBy(id, sandbox) {
		t.Errorf("%s: VM %+v (want running, labelled as the sandbox's)", sandbox, inst)
	}
}
