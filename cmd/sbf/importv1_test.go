package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	v1leases "github.com/sandboxforge/sbf/v1import/leases"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

const v1Now = "2026-03-26T12:00:00Z"

// v1World is two workspaces whose VMs v1 made on the sim (standing in for
// lima and hyperv), and v1's database about them.
type v1World struct {
	wsA, wsB, db, state string
}

func (w v1World) env() map[string]string {
	return map[string]string{"SBF_V1_DRIVERS": "lima=sim,hyperv=sim", "SBF_NOW": v1Now, "SBF_STATE_HOME": w.state}
}

// simStates maps each test workspace to its host state folder, where the
// sim keeps the workspace's world.
var simStates sync.Map

func simWorld(root string) string {
	state, _ := simStates.Load(root)
	real, _ := filepath.EvalSymlinks(root)
	return sim.WorldDir(state.(string), real)
}

func newV1World(t *testing.T, schema string, wsA string) v1World {
	t.Helper()
	w := v1World{wsA: wsA, wsB: t.TempDir(), state: t.TempDir()}
	if st, ok := simStates.LoadOrStore(w.wsA, w.state); ok { // a process test's workspace keeps its own
		w.state = st.(string)
	}
	simStates.Store(w.wsB, w.state)
	ctx := context.Background()
	for root, names := range map[string][]string{
		w.wsA: {"agent-00000001", "agent-00000003", "agent-unrelated"},
		w.wsB: {"agent-00000002"},
	} {
		d, err := sim.New(sim.Options{Dir: simWorld(root)})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			s := drivers.Spec{Name: n, CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
			if err := d.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := d.Start(ctx, s); err != nil {
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

// simNames lists a sim world.
func simNames(t *testing.T, root string) []string {
	t.Helper()
	d, err := sim.New(sim.Options{Dir: simWorld(root)})
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}
	return names
}

func parseV1Report(t *testing.T, out string) v1ImportReport {
	t.Helper()
	var rep v1ImportReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return rep
}

func classes(rep v1ImportReport) string {
	var parts []string
	for _, e := range rep.Leases {
		parts = append(parts, e.InstanceID+"="+string(e.Class)+"/"+e.Action)
	}
	return strings.Join(parts, " ")
}

const wantV1Classes = "inst_00000001=import/adopt inst_00000002=import/adopt inst_00000003=leaked/ " +
	"inst_00000005=skip/ inst_00000004=gone/"

// The real binary, on a sim workspace that needs no .sandboxforge.toml of
// v1's: the plan, and nothing changed.
func TestImportV1DryRunJSON(t *testing.T) {
	for _, schema := range []struct {
		name, stmt string
	}{{"current", v1test.Current}, {"legacy", v1test.Legacy}} {
		t.Run(schema.name, func(t *testing.T) {
			ws := newSimWorkspace(t, simSpec)
			w := newV1World(t, schema.stmt, ws.root)
			r := ws.run([]string{"SBF_V1_DRIVERS=lima=sim,hyperv=sim", "SBF_NOW=" + v1Now},
				"import-v1", "--dry-run", "--json", "--db", w.db)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			rep := parseV1Report(t, r.stdout)
			if got := classes(rep); got != wantV1Classes {
				t.Errorf("classes:\n got %s\nwant %s", got, wantV1Classes)
			}
			if rep.Schema != v1leases.Schema(schema.name) || rep.DB != w.db || !rep.DryRun || rep.Error != nil ||
				rep.Now.Format(time.RFC3339) != v1Now {
				t.Errorf("report = %+v", rep)
			}
			if len(rep.Backends) != 1 || rep.Backends[0] != (v1Backend{Driver: "sim", Listed: true, Instances: 4}) {
				t.Errorf("backends = %+v", rep.Backends)
			}
			if rep.Counts[v1leases.Import] != 2 || rep.Counts[v1leases.Leaked] != 1 || rep.Counts[v1leases.Gone] != 1 ||
				rep.Counts[v1leases.Skip] != 1 || rep.Counts[v1leases.Unseen] != 0 {
				t.Errorf("counts = %v", rep.Counts)
			}
			first := rep.Leases[0]
			if first.BackendInstance != "agent-00000001" || first.Driver != "sim" || first.WorkspaceRoot != ws.root ||
				!first.RuntimeReady || first.DockerCommand != "docker" || first.Done ||
				first.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" {
				t.Errorf("first lease = %+v", first)
			}
			if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "--delete-leaked deletes them") }) {
				t.Errorf("notes = %q", rep.Notes)
			}
			if got := simNames(t, ws.root); !slices.Equal(got, []string{"agent-00000001", "agent-00000003", "agent-unrelated"}) {
				t.Errorf("a dry run changed the world: %v", got)
			}
		})
	}
}

func TestImportV1DryRunTable(t *testing.T) {
	w := newV1World(t, v1test.Current, t.TempDir())
	r := sbf(t, w.env(), "import-v1", "--dry-run", "--delete-leaked", "--db", w.db)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"v1 lease database " + w.db + " (current schema): 5 lease(s)",
		"sim: 4 instance(s) listed",
		"INSTANCE       CLASS   DRIVER  VM              EXPIRES               WORKSPACE",
		"inst_00000003  leaked  sim     agent-00000003  2026-03-26T08:30:00Z  " + w.wsA + "  v1 marked the lease expired",
		"inst_00000005  skip    -       agent-00000005",
		"stop v1 first",
		"Dry run: nothing changed.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if len(simNames(t, w.wsA)) != 3 {
		t.Error("a dry run deleted a VM")
	}
}

// simWorldOf lists a sim world with what the sim reports of each VM.
func simWorldOf(t *testing.T, root string) map[string]drivers.Instance {
	t.Helper()
	d, err := sim.New(sim.Options{Dir: simWorld(root)})
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]drivers.Instance{}
	for _, i := range list {
		out[i.Name] = i
	}
	return out
}

func readState(t *testing.T, root string) *state.File {
	t.Helper()
	f, err := state.Read(filepath.Join(root, spec.Dir), root, "")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func workspaceID(t *testing.T, root string) string {
	t.Helper()
	_, id, err := spec.WorkspaceIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// v1Files are what an import writes in a workspace, and their contents.
func v1Files(t *testing.T, roots ...string) map[string]string {
	t.Helper()
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
func checkAdopted(t *testing.T, root, sandbox, vm string) {
	t.Helper()
	rec := readState(t, root).Sandboxes[sandbox]
	if rec == nil || rec.Instance != vm || rec.Driver != sim.Name || rec.Phase != state.Running {
		t.Errorf("%s: state record %+v (want VM %s, running)", sandbox, rec, vm)
	}
	if inst := simWorldOf(t, root)[vm]; inst.Status != drivers.Running || !inst.Label.OwnedBy(workspaceID(t, root), sandbox) {
		t.Errorf("%s: VM %+v (want running, labelled as the sandbox's)", sandbox, inst)
	}
}

// Importing adopts each active lease's VM through the engine, under its v1
// name and with its expiry; --delete-leaked deletes exactly the VMs v1
// leaked; a failed adoption names its lease and the rest goes on; a rerun
// finishes what failed and then changes nothing; no plan restarts an
// imported VM, and a reconcile pass deletes it once its lease has ended.
func TestImportV1AdoptsAndDeletesLeaked(t *testing.T) {
	w := newV1World(t, v1test.Legacy, t.TempDir())
	// wsA has only a v1 configuration file, whose [vm] differs from what
	// the VM has (v1 made it before the file changed); wsB has none.
	write(t, filepath.Join(w.wsA, ".lima-mcp.toml"), "[vm]\ncpus = 4\nmemory_gib = 8.0\n")
	env := w.env()
	env["SBF_SIM_FAULTS"] = "claim:agent-00000001=fail:1" // the first claim of v1's agent-00000001 fails

	r := sbf(t, env, "import-v1", "--delete-leaked", "--db", w.db)
	if r.code != 1 ||
		!strings.Contains(r.stdout, "inst_00000001  import  sim     agent-00000001") ||
		!strings.Contains(r.stdout, "adopt failed: adopting agent-00000001 as sandbox inst_00000001") ||
		!strings.Contains(r.stdout, "adopted: active until 2026-03-26T12:29:00Z: VM agent-00000002") ||
		!strings.Contains(r.stdout, "no .sandboxforge.toml (nor v1's .orbitforge.toml, .lima-mcp.toml) in the workspace") ||
		!strings.Contains(r.stdout, "deleted: v1 marked the lease expired") ||
		!strings.Contains(r.stderr, "1 of the v1 leases could not be taken over") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkAdopted(t, w.wsB, "inst_00000002", "agent-00000002")
	if names := simNames(t, w.wsA); !slices.Equal(names, []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("world after import: %v (want the leaked VM deleted, nothing else)", names)
	}

	// The rerun adopts what failed, and nothing twice.
	r = sbf(t, env, "import-v1", "--delete-leaked", "--json", "--db", w.db)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := parseV1Report(t, r.stdout)
	const want = "inst_00000001=import/adopt inst_00000002=skip/ inst_00000005=skip/ inst_00000003=gone/ inst_00000004=gone/"
	if classes(rep) != want {
		t.Errorf("rerun:\n got %s\nwant %s", classes(rep), want)
	}
	for _, e := range rep.Leases {
		if want := e.Action != ""; e.Done != want || e.Error != "" {
			t.Errorf("%s: action %q done %v error %q", e.InstanceID, e.Action, e.Done, e.Error)
		}
		if e.InstanceID == "inst_00000001" && (e.Sandbox != "inst_00000001" ||
			!slices.Equal(e.Notes, []string{"an earlier import of it did not finish; importing it again"})) {
			t.Errorf("inst_00000001: sandbox %q, notes %q", e.Sandbox, e.Notes)
		}
		if e.InstanceID == "inst_00000002" && !strings.Contains(e.Reason, "sbf already keeps VM agent-00000002 (sandbox inst_00000002 of "+w.wsB+")") {
			t.Errorf("inst_00000002: %s", e.Reason)
		}
	}
	checkAdopted(t, w.wsA, "inst_00000001", "agent-00000001")

	// The sandbox is declared with the VM's shape (the sim made it with 1
	// CPU, 1 GiB, 5 GiB; the workspace's [vm] says 4 CPUs, 8 GiB and sbf's
	// default disk is 15 GiB) and v1's lease.
	res, err := spec.Load(spec.Options{Root: w.wsA, Host: spec.CurrentHost()})
	if err != nil {
		t.Fatal(err)
	}
	sb, lease := res.Config.Sandboxes["inst_00000001"], res.Config.Leases["inst_00000001"]
	if !res.AdHoc["inst_00000001"] || sb.Adopt != "agent-00000001" || sb.Driver != sim.Name || sb.CPUs != 1 ||
		sb.MemoryGiB != 1 || sb.DiskGiB != 5 || len(sb.Mounts) != 0 || len(sb.Ports) != 0 {
		t.Errorf("declared %+v", sb)
	}
	if lease.AcquiredAt.Format(time.RFC3339) != "2026-03-26T11:00:00Z" || lease.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" {
		t.Errorf("lease %+v", lease)
	}
	// Nothing to change: no restart, no replacement. (wsB needs a spec
	// file for the CLI, as the import's note says.)
	if r := sbf(t, env, "-C", w.wsB, "plan"); r.code != 1 || !strings.Contains(r.stderr, "no .sandboxforge.toml in") {
		t.Errorf("plan of wsB: exit %d\n%s", r.code, r.stderr)
	}
	write(t, filepath.Join(w.wsB, spec.FileName), "")
	for _, root := range []string{w.wsA, w.wsB} {
		if r := sbf(t, env, "-C", root, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
			t.Errorf("plan of %s: exit %d\n%s\n%s", root, r.code, r.stdout, r.stderr)
		}
	}

	// A third run changes nothing at all.
	before, world := v1Files(t, w.wsA, w.wsB), simWorldOf(t, w.wsA)
	r = sbf(t, env, "import-v1", "--delete-leaked", "--json", "--db", w.db)
	if rep := parseV1Report(t, r.stdout); r.code != 0 || rep.Counts[v1leases.Import] != 0 || rep.Counts[v1leases.Leaked] != 0 {
		t.Errorf("third run: exit %d: %s", r.code, classes(rep))
	}
	if after := v1Files(t, w.wsA, w.wsB); !maps.Equal(before, after) || len(after) != 4 {
		t.Errorf("a rerun rewrote files:\n%v\n%v", before, after)
	}
	if after := simWorldOf(t, w.wsA); len(after) != len(world) || !reflect.DeepEqual(after, world) {
		t.Errorf("a rerun changed the world: %v → %v", world, after)
	}

	// Once v1's rows run out, what sbf keeps is still not v1's leak.
	late := maps.Clone(env)
	late["SBF_NOW"] = "2026-03-26T12:29:30Z"
	r = sbf(t, late, "import-v1", "--delete-leaked", "--json", "--db", w.db)
	if rep := parseV1Report(t, r.stdout); r.code != 0 || rep.Counts[v1leases.Leaked] != 0 || rep.Counts[v1leases.Skip] != 3 {
		t.Errorf("exit %d: %s", r.code, classes(rep))
	}

	// The lease ends as v1's would have: a reconcile pass deletes the VM.
	if r := sbf(t, late, "-C", w.wsB, "reconcile"); r.code != 0 || simWorldOf(t, w.wsB)["agent-00000002"].Name != "" {
		t.Errorf("reconcile after v1's expiry: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rec := readState(t, w.wsB).Sandboxes["inst_00000002"]; rec == nil || rec.Phase != state.Expired {
		t.Errorf("inst_00000002 after expiry: %+v", rec)
	}
	if r := sbf(t, late, "-C", w.wsA, "reconcile"); r.code != 0 || !slices.Equal(simNames(t, w.wsA), []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("reconcile before the lease ends: exit %d, world %v\n%s", r.code, simNames(t, w.wsA), r.stderr)
	}
	late["SBF_NOW"] = "2026-03-26T12:30:00Z"
	if r := sbf(t, late, "-C", w.wsA, "reconcile"); r.code != 0 || !slices.Equal(simNames(t, w.wsA), []string{"agent-unrelated"}) {
		t.Errorf("reconcile at the lease's end: exit %d, world %v\n%s", r.code, simNames(t, w.wsA), r.stderr)
	}
}

// A dry run imports nothing: no declaration, no state, no label.
func TestImportV1DryRunChangesNothing(t *testing.T) {
	w := newV1World(t, v1test.Current, t.TempDir())
	r := sbf(t, w.env(), "import-v1", "--dry-run", "--delete-leaked", "--json", "--db", w.db)
	rep := parseV1Report(t, r.stdout)
	if r.code != 0 || classes(rep) != strings.Replace(wantV1Classes, "leaked/", "leaked/delete", 1) {
		t.Fatalf("exit %d: %s\n%s", r.code, classes(rep), r.stderr)
	}
	for _, e := range rep.Leases {
		if e.Done || (e.Action == "adopt") != (e.Sandbox != "") {
			t.Errorf("%s: %+v", e.InstanceID, e)
		}
	}
	if files := v1Files(t, w.wsA, w.wsB); len(files) != 0 {
		t.Errorf("a dry run wrote %v", slices.Sorted(maps.Keys(files)))
	}
	for _, root := range []string{w.wsA, w.wsB} {
		for name, inst := range simWorldOf(t, root) {
			if inst.Label != nil {
				t.Errorf("a dry run labelled %s: %+v", name, inst.Label)
			}
		}
	}
	if entries, err := state.OpenHostIndex(w.state).All(); err != nil || len(entries) != 0 {
		t.Errorf("host index after a dry run: %v %v", entries, err)
	}
}

// A v1 id that is not a sandbox name is imported under a name derived from
// it, and the report says so; a lease older than [lease] max_lifetime
// counts from later rather than ending at once.
func TestImportV1MapsIDsAndKeepsOldLeases(t *testing.T) {
	ws, st := t.TempDir(), t.TempDir()
	simStates.Store(ws, st)
	d, err := sim.New(sim.Options{Dir: simWorld(ws)})
	if err != nil {
		t.Fatal(err)
	}
	s := drivers.Spec{Name: "agent-00000006", CPUs: 2, MemoryGiB: 4, DiskGiB: 30}
	if err := d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	db := v1test.Write(t, t.TempDir(), []string{v1test.Current},
		v1test.Row{ID: "inst.00000006", Backend: "lima", Root: ws, Status: "running", Created: "2026-03-24T09:00:00Z",
			Expires: "2026-03-26T12:30:00Z", Name: "agent-00000006"})
	env := map[string]string{"SBF_V1_DRIVERS": "lima=sim", "SBF_NOW": v1Now, "SBF_STATE_HOME": st}
	name, mapped := v1SandboxName("inst.00000006")
	if !mapped || !strings.HasPrefix(name, "inst_00000006-") || !spec.ValidSandboxName(name) {
		t.Fatalf("mapped to %q", name)
	}

	r := sbf(t, env, "import-v1", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "inst.00000006  import") ||
		!strings.Contains(r.stdout, "adopted: active until 2026-03-26T12:30:00Z: VM agent-00000006 becomes sandbox "+name) ||
		!strings.Contains(r.stdout, `v1's id "inst.00000006" is not a valid sbf sandbox name, so the sandbox is named `+name) ||
		!strings.Contains(r.stdout, "the lease counts from 2026-03-25T12:30:00Z") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkAdopted(t, ws, name, "agent-00000006") // started: v1 left it stopped
	res, err := spec.Load(spec.Options{Root: ws, Host: spec.CurrentHost(), Now: time.Date(2026, 3, 26, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Config.Leases[name]; l.AcquiredAt.Format(time.RFC3339) != "2026-03-25T12:30:00Z" ||
		l.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" || len(res.Warnings) != 0 {
		t.Errorf("lease %+v, warnings %v", l, res.Warnings)
	}
	// A workspace with no configuration file: the built-in defaults, and
	// the VM's own shape.
	if _, err := os.Stat(filepath.Join(ws, spec.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("import wrote %s: %v", spec.FileName, err)
	}
	write(t, filepath.Join(ws, spec.FileName), "")
	if r := sbf(t, env, "-C", ws, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestV1SandboxName(t *testing.T) {
	for id, want := range map[string]string{
		"inst_0a1b2c3d": "inst_0a1b2c3d",
		"inst-x":        "inst-x",
	} {
		if got, mapped := v1SandboxName(id); got != want || mapped {
			t.Errorf("%q → %q, %v", id, got, mapped)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"inst.0a1b2c3d", "inst 0a1b2c3d", "__inst__0a1b2c3d__", "", "!!!", "ümlaut",
		strings.Repeat("a", 41), strings.Repeat("ab_", 20)} {
		got, mapped := v1SandboxName(id)
		again, _ := v1SandboxName(id)
		if !mapped || !spec.ValidSandboxName(got) || got != again {
			t.Errorf("%q → %q (mapped %v, again %q)", id, got, mapped, again)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", id, other, got)
		}
		seen[got] = id
	}
	if got, _ := v1SandboxName("inst.0a1b2c3d"); !strings.HasPrefix(got, "inst_0a1b2c3d-") {
		t.Errorf("inst.0a1b2c3d → %q", got)
	}
}

func TestImportV1MissingDB(t *testing.T) {
	dir := t.TempDir()
	r := sbf(t, map[string]string{"SBF_STATE_HOME": dir}, "import-v1", "--dry-run", "-C", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "LEASE_DB_PATH") || !strings.Contains(r.stderr, "--db PATH") ||
		!strings.Contains(r.stderr, "state/leases.db") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	r = sbf(t, map[string]string{"LEASE_DB_PATH": filepath.Join(dir, "v1.db")}, "import-v1", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"error_code": "ERROR"`) || !strings.Contains(r.stdout, "(LEASE_DB_PATH="+filepath.Join(dir, "v1.db")+")") {
		t.Errorf("exit %d: %s", r.code, r.stdout)
	}
	r = sbf(t, nil, "import-v1", "--db", filepath.Join(dir, "x.db"))
	if r.code != 1 || !strings.Contains(r.stderr, "--db "+filepath.Join(dir, "x.db")+": no such file") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	r = sbf(t, map[string]string{"SBF_V1_DRIVERS": "lima"}, "import-v1", "--db", v1test.Write(t, dir, []string{v1test.Current}))
	if r.code != 1 || !strings.Contains(r.stderr, "SBF_V1_DRIVERS") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// blindDriver lists only sbf's names, as hyperv does; seeingDriver
// can list any name.
type blindDriver struct{ reconcile.Driver }

func (blindDriver) List(context.Context) ([]drivers.Instance, error) {
	return []drivers.Instance{{Name: "sbf-0123abcd-web"}}, nil
}

type seeingDriver struct{ blindDriver }

func (seeingDriver) ListAll(context.Context) ([]drivers.Instance, error) {
	return []drivers.Instance{{Name: "agent-00000001"}, {Name: "sbf-0123abcd-web"}}, nil
}

// A backend whose List hides v1's names leaves its leases unseen: not
// gone, never imported or deleted.
func TestImportV1BlindBackends(t *testing.T) {
	leases := []v1leases.Lease{
		{InstanceID: "inst_1", Backend: "lima", BackendInstance: "agent-00000001"},
		{InstanceID: "inst_2", Backend: "hyperv", BackendInstance: "agent-00000001"},
		{InstanceID: "inst_3", Backend: "vz", BackendInstance: "agent-00000001"},
	}
	get := func(name string, _ *spec.Resolved) (reconcile.Driver, error) {
		switch name {
		case "lima":
			return blindDriver{}, nil
		case "hyperv":
			return seeingDriver{}, nil
		}
		return nil, &drivers.UnavailableError{Driver: name, Reason: "not on this host"}
	}
	a := &app{getenv: func(string) string { return "" }}
	inv := a.v1Inventory(context.Background(), get, leases, map[string]string{"lima": "lima", "hyperv": "hyperv", "vz": "vz"})
	if why := inv.Unlisted["lima"]; !strings.Contains(why, "lists only instances sbf named (sbf-…) or labelled, so v1's VMs (agent-…) are invisible") {
		t.Errorf("lima: %q", why)
	}
	if names := inv.Listed["hyperv"]; len(names) != 2 || !names["agent-00000001"] || inv.owner["hyperv"]["agent-00000001"] == nil {
		t.Errorf("hyperv: %v", names)
	}
	if why := inv.Unlisted["vz"]; !strings.Contains(why, "not on this host") {
		t.Errorf("vz: %q", why)
	}
	if _, ok := inv.Listed["lima"]; ok {
		t.Error("lima counts as listed")
	}

	// Through the command: v1's hyperv leases, which sbf's hyperv driver
	// cannot show (not on this host, or a List that hides them), delete
	// nothing. (lima lists every name now when limactl is here.)
	dir := t.TempDir()
	db := v1test.Write(t, dir, []string{v1test.Current},
		v1test.Row{ID: "inst_00000003", Backend: "hyperv", Root: dir, Status: "expired", Created: "2026-03-26T08:00:00Z",
			Expires: "2026-03-26T08:30:00Z", Name: "agent-00000003"})
	r := sbf(t, map[string]string{"SBF_NOW": v1Now, "SBF_STATE_HOME": dir}, "import-v1", "--delete-leaked", "--json", "--db", db)
	rep := parseV1Report(t, r.stdout)
	if r.code != 0 || classes(rep) != "inst_00000003=unseen/" || len(rep.Backends) != 1 || rep.Backends[0].Listed ||
		!slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "cannot show v1's VMs (hyperv)") }) {
		t.Errorf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A VM carrying sbf's label (adopted by sbf, whatever its host index says)
// is sbf's: never deleted as v1's leak nor adopted again.
func TestImportV1LeavesLabelledVMs(t *testing.T) {
	w := newV1World(t, v1test.Current, t.TempDir())
	d, err := sim.New(sim.Options{Dir: simWorld(w.wsA)})
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range []string{"agent-00000001", "agent-00000003"} {
		if err := d.Claim(context.Background(), vm, drivers.Owner{WorkspaceID: "ws_0123456789ab", Sandbox: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	r := sbf(t, w.env(), "import-v1", "--delete-leaked", "--dry-run", "--json", "--db", w.db)
	rep := parseV1Report(t, r.stdout)
	const want = "inst_00000002=import/adopt inst_00000001=skip/ inst_00000003=skip/ inst_00000005=skip/ inst_00000004=gone/"
	if r.code != 0 || classes(rep) != want {
		t.Fatalf("exit %d\n got %s\nwant %s\n%s", r.code, classes(rep), want, r.stderr)
	}
	if e := rep.Leases[2]; !strings.Contains(e.Reason, "sbf already keeps VM agent-00000003 (labelled as sandbox mine of workspace ws_0123456789ab)") {
		t.Errorf("reason: %s", e.Reason)
	}
}

// A v1 that never leased anything: an empty report, not nulls.
func TestImportV1EmptyDB(t *testing.T) {
	dir := t.TempDir()
	db := v1test.Write(t, dir, v1test.Concat([]string{v1test.Current}, v1test.Indexes))
	r := sbf(t, map[string]string{"SBF_STATE_HOME": dir}, "import-v1", "--json", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, `"leases": []`) || !strings.Contains(r.stdout, `"backends": []`) ||
		!strings.Contains(r.stdout, `"error": null`) {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = sbf(t, map[string]string{"SBF_STATE_HOME": dir}, "import-v1", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "(current schema): 0 lease(s)") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
