package v1import

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/v1import/leases"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

// run takes an inventory as of now and runs it, as one `sbf import-v1`.
func (w world) run(t *testing.T, now string, o Options) (*Report, error) {
	t.Helper()
	eng := w.engine(t, now)
	inv, err := TakeInventory(context.Background(), eng, w.src())
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), eng, inv, o)
}

// entryOf is the report's entry for a v1 instance_id.
func entryOf(t *testing.T, rep *Report, id string) Entry {
	t.Helper()
	i := slices.IndexFunc(rep.Leases, func(e Entry) bool { return e.InstanceID == id })
	if i < 0 {
		t.Fatalf("no lease %s in %s", id, classes(rep.Leases))
	}
	return rep.Leases[i]
}

// Running adopts each active lease's VM through the engine, under its v1
// name and with its expiry; DeleteLeaked deletes exactly the VMs v1
// leaked; a failed adoption names its lease and the rest goes on; a rerun
// finishes what failed and then changes nothing.
func TestRunAdoptsAndDeletesLeaked(t *testing.T) {
	w := newWorld(t, v1test.Legacy)
	// wsA has only a v1 configuration file, whose [vm] differs from what
	// the VM has (v1 made it before the file changed); wsB has none.
	if err := os.WriteFile(filepath.Join(w.wsA, ".lima-mcp.toml"), []byte("[vm]\ncpus = 4\nmemory_gib = 8.0\n"),
		0o644); err != nil {
		t.Fatal(err)
	}
	w.env["SBF_SIM_FAULTS"] = "claim:agent-00000001=fail:1" // the first claim of v1's agent-00000001 fails

	rep, err := w.run(t, v1Now, options(true))
	if err == nil || err.Error() != "1 of the v1 leases could not be taken over; see the report" {
		t.Errorf("err = %v", err)
	}
	if e := entryOf(t, rep, "inst_00000001"); e.Done ||
		!strings.Contains(e.Error, "adopting agent-00000001 as sandbox inst_00000001") {
		t.Errorf("inst_00000001: %+v", e)
	}
	const noSpec = "no .sandboxforge.toml (nor v1's .orbitforge.toml, .lima-mcp.toml) in the workspace"
	if e := entryOf(t, rep, "inst_00000002"); !e.Done || e.Error != "" ||
		!slices.ContainsFunc(e.Notes, func(n string) bool { return strings.HasPrefix(n, noSpec) }) {
		t.Errorf("inst_00000002: %+v", e)
	}
	if e := entryOf(t, rep, "inst_00000003"); !e.Done || e.Action != Delete {
		t.Errorf("inst_00000003: %+v", e)
	}
	w.checkAdopted(t, w.wsB, "inst_00000002", "agent-00000002")
	if names := w.names(t, w.wsA); !slices.Equal(names, []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("world after import: %v (want the leaked VM deleted, nothing else)", names)
	}

	// The rerun adopts what failed, and nothing twice.
	rep, err = w.run(t, v1Now, options(true))
	if err != nil {
		t.Fatal(err)
	}
	const want = "inst_00000001=import/adopt inst_00000002=skip/ inst_00000005=skip/ inst_00000003=gone/ " +
		"inst_00000004=gone/"
	if classes(rep.Leases) != want {
		t.Errorf("rerun:\n got %s\nwant %s", classes(rep.Leases), want)
	}
	for _, e := range rep.Leases {
		if want := e.Action != ""; e.Done != want || e.Error != "" {
			t.Errorf("%s: action %q done %v error %q", e.InstanceID, e.Action, e.Done, e.Error)
		}
	}
	if e := entryOf(t, rep, "inst_00000001"); e.Sandbox != "inst_00000001" ||
		!slices.Equal(e.Notes, []string{"an earlier import of it did not finish; importing it again"}) {
		t.Errorf("inst_00000001: sandbox %q, notes %q", e.Sandbox, e.Notes)
	}
	held := "sbf already keeps VM agent-00000002 (sandbox inst_00000002 of " + w.wsB + ")"
	if e := entryOf(t, rep, "inst_00000002"); !strings.Contains(e.Reason, held) {
		t.Errorf("inst_00000002: %s", e.Reason)
	}
	w.checkAdopted(t, w.wsA, "inst_00000001", "agent-00000001")
	w.checkDeclared(t)
	w.checkRerunsChangeNothing(t)
	w.checkLeasesEnd(t)
}

// checkDeclared: the sandbox is declared with the VM's shape (the sim made
// it with 1 CPU, 1 GiB, 5 GiB; the workspace's [vm] says 4 CPUs, 8 GiB and
// sbf's default disk is 15 GiB) and v1's lease, so no plan restarts or
// replaces an imported VM.
func (w world) checkDeclared(t *testing.T) {
	t.Helper()
	eng := w.engine(t, v1Now)
	res, err := eng.Load(w.ws(w.wsA))
	if err != nil {
		t.Fatal(err)
	}
	sb, lease := res.Config.Sandboxes["inst_00000001"], res.Config.Leases["inst_00000001"]
	if !res.AdHoc["inst_00000001"] || sb.Adopt != "agent-00000001" || sb.Driver != sim.Name || sb.CPUs != 1 ||
		sb.MemoryGiB != 1 || sb.DiskGiB != 5 || len(sb.Mounts) != 0 || len(sb.Ports) != 0 {
		t.Errorf("declared %+v", sb)
	}
	if lease.AcquiredAt.Format(time.RFC3339) != "2026-03-26T11:00:00Z" ||
		lease.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" {
		t.Errorf("lease %+v", lease)
	}
	for _, root := range []string{w.wsA, w.wsB} {
		next, err := eng.Plan(context.Background(), w.ws(root), passOptions())
		if err != nil || !next.Plan.Empty() {
			t.Errorf("plan of %s: %v %+v", root, err, next.Plan.Actions)
		}
	}
}

// checkRerunsChangeNothing: a third run writes nothing and touches no VM;
// once v1's rows run out, what sbf keeps is still not v1's leak.
func (w world) checkRerunsChangeNothing(t *testing.T) {
	t.Helper()
	before, vms := files(w.wsA, w.wsB), w.vms(t, w.wsA)
	rep, err := w.run(t, v1Now, options(true))
	if err != nil || rep.Counts[leases.Import] != 0 || rep.Counts[leases.Leaked] != 0 {
		t.Errorf("third run: %v: %s", err, classes(rep.Leases))
	}
	if after := files(w.wsA, w.wsB); !maps.Equal(before, after) || len(after) != 4 {
		t.Errorf("a rerun rewrote files:\n%v\n%v", before, after)
	}
	if after := w.vms(t, w.wsA); !reflect.DeepEqual(after, vms) {
		t.Errorf("a rerun changed the world: %v → %v", vms, after)
	}
	rep, err = w.run(t, "2026-03-26T12:29:30Z", options(true))
	if err != nil || rep.Counts[leases.Leaked] != 0 || rep.Counts[leases.Skip] != 3 {
		t.Errorf("late run: %v: %s", err, classes(rep.Leases))
	}
}

// checkLeasesEnd: an imported lease ends as v1's would have: a reconcile
// pass deletes the VM at v1's expiry, not before.
func (w world) checkLeasesEnd(t *testing.T) {
	t.Helper()
	reconcileAt := func(root, now string) {
		t.Helper()
		if _, err := w.engine(t, now).Apply(context.Background(), w.ws(root), passOptions()); err != nil {
			t.Fatalf("reconcile %s at %s: %v", root, now, err)
		}
	}
	reconcileAt(w.wsB, "2026-03-26T12:29:30Z")
	if _, ok := w.vms(t, w.wsB)["agent-00000002"]; ok {
		t.Error("agent-00000002 outlived its lease")
	}
	f, err := state.Read(filepath.Join(w.wsB, spec.Dir), w.wsB, "")
	if rec := f.Sandboxes["inst_00000002"]; err != nil || rec == nil || rec.Phase != state.Expired {
		t.Errorf("inst_00000002 after expiry: %+v %v", rec, err)
	}
	reconcileAt(w.wsA, "2026-03-26T12:29:30Z")
	if names := w.names(t, w.wsA); !slices.Equal(names, []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("before the lease ends: %v", names)
	}
	reconcileAt(w.wsA, "2026-03-26T12:30:00Z")
	if names := w.names(t, w.wsA); !slices.Equal(names, []string{"agent-unrelated"}) {
		t.Errorf("at the lease's end: %v", names)
	}
}

// A v1 id that is not a sandbox name is imported under a name derived from
// it, and the entry says so; a lease older than [lease] max_lifetime
// counts from later rather than ending at once; a stopped VM is started.
func TestRunMapsIDsAndKeepsOldLeases(t *testing.T) {
	w := world{wsA: tempDir(t), host: tempDir(t), env: map[string]string{}}
	vm := drivers.Spec{Name: "agent-00000006", CPUs: 2, MemoryGiB: 4, DiskGiB: 30}
	if err := w.sim(t, w.wsA).Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	w.db = v1test.Write(t, t.TempDir(), []string{v1test.Current},
		v1test.Row{ID: "inst.00000006", Backend: "lima", Root: w.wsA, Status: "running", Created: "2026-03-24T09:00:00Z",
			Expires: "2026-03-26T12:30:00Z", Name: "agent-00000006"})
	name, mapped := sandboxName("inst.00000006")
	if !mapped || !strings.HasPrefix(name, "inst_00000006-") || !spec.ValidSandboxName(name) {
		t.Fatalf("mapped to %q", name)
	}

	rep, err := w.run(t, v1Now, options(false))
	if err != nil {
		t.Fatal(err)
	}
	e := entryOf(t, rep, "inst.00000006")
	notes := strings.Join(e.Notes, "; ")
	if !e.Done || e.Sandbox != name || e.Class != leases.Import ||
		!strings.Contains(e.Reason, "active until 2026-03-26T12:30:00Z: VM agent-00000006 becomes sandbox "+name) ||
		!strings.Contains(notes, `v1's id "inst.00000006" is not a valid sbf sandbox name, so the sandbox is named `+name) ||
		!strings.Contains(notes, "the lease counts from 2026-03-25T12:30:00Z") {
		t.Fatalf("entry %+v", e)
	}
	w.checkAdopted(t, w.wsA, name, "agent-00000006") // started: v1 left it stopped
	res, err := w.engine(t, v1Now).Load(w.ws(w.wsA))
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Config.Leases[name]; l.AcquiredAt.Format(time.RFC3339) != "2026-03-25T12:30:00Z" ||
		l.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" || len(res.Warnings) != 0 {
		t.Errorf("lease %+v, warnings %v", l, res.Warnings)
	}
	// A workspace with no configuration file: the built-in defaults, and
	// the VM's own shape; none is written.
	if _, err := os.Stat(filepath.Join(w.wsA, spec.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("import wrote %s: %v", spec.FileName, err)
	}
	next, err := w.engine(t, v1Now).Plan(context.Background(), w.ws(w.wsA), passOptions())
	if err != nil || !next.Plan.Empty() {
		t.Errorf("plan: %v %+v", err, next)
	}
}

func TestSandboxName(t *testing.T) {
	for id, want := range map[string]string{
		"inst_0a1b2c3d": "inst_0a1b2c3d",
		"inst-x":        "inst-x",
	} {
		if got, mapped := sandboxName(id); got != want || mapped {
			t.Errorf("%q → %q, %v", id, got, mapped)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"inst.0a1b2c3d", "inst 0a1b2c3d", "__inst__0a1b2c3d__", "", "!!!", "ümlaut",
		strings.Repeat("a", 41), strings.Repeat("ab_", 20)} {
		got, mapped := sandboxName(id)
		again, _ := sandboxName(id)
		if !mapped || !spec.ValidSandboxName(got) || got != again {
			t.Errorf("%q → %q (mapped %v, again %q)", id, got, mapped, again)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", id, other, got)
		}
		seen[got] = id
	}
	if got, _ := sandboxName("inst.0a1b2c3d"); !strings.HasPrefix(got, "inst_0a1b2c3d-") {
		t.Errorf("inst.0a1b2c3d → %q", got)
	}
}

// passOptions are a loop pass's: no lease changes.
func passOptions() reconcile.Options {
	return reconcile.Options{Intent: reconcile.Reconcile{}}
}
