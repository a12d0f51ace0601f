package cli

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/v1import"
	"github.com/sandboxforge/sbf/v1import/leases"
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
		parts = append(parts, e.InstanceID+"="+string(e.Class)+"/"+string(e.Action))
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
			if rep.Schema != leases.Schema(schema.name) || rep.DB != w.db || !rep.DryRun || rep.Error != nil ||
				rep.Now.Format(time.RFC3339) != v1Now {
				t.Errorf("report = %+v", rep)
			}
			if len(rep.Backends) != 1 || rep.Backends[0] != (v1import.Backend{Driver: "sim", Listed: true, Instances: 4}) {
				t.Errorf("backends = %+v", rep.Backends)
			}
			if rep.Counts[leases.Import] != 2 || rep.Counts[leases.Leaked] != 1 || rep.Counts[leases.Gone] != 1 ||
				rep.Counts[leases.Skip] != 1 || rep.Counts[leases.Unseen] != 0 {
				t.Errorf("counts = %v", rep.Counts)
			}
			first := rep.Leases[0]
			if first.BackendInstance != "agent-00000001" || first.Driver != "sim" || first.WorkspaceRoot != ws.root ||
				!first.RuntimeReady || first.DockerCommand != "docker" || first.Done ||
				first.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" {
				t.Errorf("first lease = %+v", first)
			}
			deleteNote := func(n string) bool { return strings.Contains(n, "--delete-leaked deletes them") }
			if !slices.ContainsFunc(rep.Notes, deleteNote) {
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
	inst := simWorldOf(t, root)[vm]
	if inst.Status != drivers.Running || !inst.Label.OwnedBy(workspaceID(t, root), sandbox) {
		t.Errorf("%s: VM %+v (want running, labelled as the sandbox's)", sandbox, inst)
	}
}

// import-v1 adopts and, with --delete-leaked, deletes (v1import's tests
// say how); the table says what became of each lease, a failed adoption
// exits 1 and names its lease while the rest goes on, and the --json
// rerun that finishes it exits 0. sbf's CLI then plans the imported
// sandboxes with no change, once the workspace has its file.
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
	const want = "inst_00000001=import/adopt inst_00000002=skip/ inst_00000005=skip/ inst_00000003=gone/ " +
		"inst_00000004=gone/"
	if classes(rep) != want {
		t.Errorf("rerun:\n got %s\nwant %s", classes(rep), want)
	}
	for _, e := range rep.Leases {
		if want := e.Action != ""; e.Done != want || e.Error != "" {
			t.Errorf("%s: action %q done %v error %q", e.InstanceID, e.Action, e.Done, e.Error)
		}
	}
	checkAdopted(t, w.wsA, "inst_00000001", "agent-00000001")

	// wsB needs a spec file for the CLI, as the import's note says.
	if r := sbf(t, env, "-C", w.wsB, "plan"); r.code != 1 || !strings.Contains(r.stderr, "no .sandboxforge.toml in") {
		t.Errorf("plan of wsB: exit %d\n%s", r.code, r.stderr)
	}
	write(t, filepath.Join(w.wsB, spec.FileName), "")
	for _, root := range []string{w.wsA, w.wsB} {
		r := sbf(t, env, "-C", root, "plan", "--detailed-exitcode")
		if r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
			t.Errorf("plan of %s: exit %d\n%s\n%s", root, r.code, r.stdout, r.stderr)
		}
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

// The notes of an import show in the table: a v1 id mapped to a sandbox
// name, a lease start moved to fit [lease] max_lifetime.
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
	const name = "inst_00000006-256401bd" // v1import's mapping of inst.00000006

	r := sbf(t, env, "import-v1", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "inst.00000006  import") ||
		!strings.Contains(r.stdout, "adopted: active until 2026-03-26T12:30:00Z: VM agent-00000006 becomes sandbox "+name) ||
		!strings.Contains(r.stdout, `v1's id "inst.00000006" is not a valid sbf sandbox name, so the sandbox is `+
			"named "+name) ||
		!strings.Contains(r.stdout, "the lease counts from 2026-03-25T12:30:00Z") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
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
	if r.code != 1 || !strings.Contains(r.stdout, `"error_code": "ERROR"`) ||
		!strings.Contains(r.stdout, "(LEASE_DB_PATH="+filepath.Join(dir, "v1.db")+")") {
		t.Errorf("exit %d: %s", r.code, r.stdout)
	}
	r = sbf(t, nil, "import-v1", "--db", filepath.Join(dir, "x.db"))
	if r.code != 1 || !strings.Contains(r.stderr, "--db "+filepath.Join(dir, "x.db")+": no such file") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	db := v1test.Write(t, dir, []string{v1test.Current})
	r = sbf(t, map[string]string{"SBF_V1_DRIVERS": "lima"}, "import-v1", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "SBF_V1_DRIVERS") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// v1's hyperv leases, which sbf's hyperv driver cannot show (not on this
// host, or a List that hides them), are unseen and delete nothing; the
// report says which backend could not be asked. (lima lists every name
// when limactl is here.)
func TestImportV1BlindBackends(t *testing.T) {
	dir := t.TempDir()
	db := v1test.Write(t, dir, []string{v1test.Current},
		v1test.Row{ID: "inst_00000003", Backend: "hyperv", Root: dir, Status: "expired", Created: "2026-03-26T08:00:00Z",
			Expires: "2026-03-26T08:30:00Z", Name: "agent-00000003"})
	env := map[string]string{"SBF_NOW": v1Now, "SBF_STATE_HOME": dir}
	r := sbf(t, env, "import-v1", "--delete-leaked", "--json", "--db", db)
	rep := parseV1Report(t, r.stdout)
	if r.code != 0 || classes(rep) != "inst_00000003=unseen/" || len(rep.Backends) != 1 || rep.Backends[0].Listed ||
		!slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "cannot show v1's VMs (hyperv)") }) {
		t.Errorf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
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
