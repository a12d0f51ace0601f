package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/v1leases"
	"github.com/sandboxforge/sbf/internal/v1leases/v1test"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
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

func simWorld(root string) string { return filepath.Join(root, spec.Dir, "sim") }

func newV1World(t *testing.T, schema string, wsA string) v1World {
	t.Helper()
	w := v1World{wsA: wsA, wsB: t.TempDir(), state: t.TempDir()}
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

// Until the engine can adopt, importing refuses and changes nothing, even
// what --delete-leaked would delete.
func TestImportV1RefusesWithoutAdoption(t *testing.T) {
	if adoptV1 != nil {
		t.Skip("adoption is wired")
	}
	w := newV1World(t, v1test.Current, t.TempDir())
	r := sbf(t, w.env(), "import-v1", "--delete-leaked", "--db", w.db)
	if r.code != 1 || !strings.Contains(r.stderr, "importing needs instance adoption, not built yet; --dry-run shows the plan") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = sbf(t, w.env(), "import-v1", "--json", "--db", w.db)
	rep := parseV1Report(t, r.stdout)
	if r.code != 1 || rep.Error == nil || !strings.Contains(rep.Error.Message, "not built yet") || classes(rep) != wantV1Classes {
		t.Errorf("exit %d, report %+v", r.code, rep)
	}
	if len(simNames(t, w.wsA)) != 3 {
		t.Error("a refused import deleted a VM")
	}
}

// With adoption wired, each import goes through adoptV1 with what v1 knew,
// --delete-leaked deletes exactly the VMs v1 leaked, and a rerun leaves
// alone what sbf keeps now.
func TestImportV1AdoptsAndDeletesLeaked(t *testing.T) {
	old := adoptV1
	defer func() { adoptV1 = old }()
	w := newV1World(t, v1test.Legacy, t.TempDir())
	var got []v1Adoption
	fail := "inst_00000001"
	adoptV1 = func(_ context.Context, eng *reconcile.Engine, ad v1Adoption) error {
		if eng == nil || eng.HostDir != w.state {
			t.Errorf("engine = %+v", eng)
		}
		got = append(got, ad)
		if ad.Sandbox == fail {
			return errors.New("the instance is owned already")
		}
		// What the engine's adoption records, as every lease does.
		return state.OpenHostIndex(eng.HostDir).Put(state.IndexEntry{Instance: ad.Instance, Sandbox: ad.Sandbox,
			Driver: ad.Driver, WorkspaceRoot: ad.WS.Root, ExpiresAt: ad.Expires})
	}

	// A failed adoption is an error naming the lease; the rest goes on.
	r := sbf(t, w.env(), "import-v1", "--delete-leaked", "--db", w.db)
	if r.code != 1 || len(got) != 2 ||
		!strings.Contains(r.stdout, "inst_00000001  import  sim     agent-00000001") ||
		!strings.Contains(r.stdout, "adopt failed: the instance is owned already") ||
		!strings.Contains(r.stdout, "adopted: active until 2026-03-26T12:29:00Z: VM agent-00000002") ||
		!strings.Contains(r.stdout, "deleted: v1 marked the lease expired") ||
		!strings.Contains(r.stderr, "1 of the v1 leases could not be taken over") {
		t.Errorf("exit %d adoptions %d\n%s\n%s", r.code, len(got), r.stdout, r.stderr)
	}
	if len(got) != 2 {
		t.FailNow()
	}
	a := got[0]
	if a.WS.Root != w.wsA || a.Sandbox != "inst_00000001" || a.Driver != "sim" || a.Instance != "agent-00000001" ||
		!a.Expires.Equal(time.Date(2026, 3, 26, 12, 30, 0, 0, time.UTC)) || a.Lease.OwnerSession != "local" ||
		!a.Lease.RuntimeReady || a.Lease.DockerCommand != "docker" {
		t.Errorf("adoption = %+v", a)
	}
	if got[1].Sandbox != "inst_00000002" || got[1].WS.Root != w.wsB || got[1].Instance != "agent-00000002" {
		t.Errorf("second adoption = %+v", got[1])
	}
	if names := simNames(t, w.wsA); !slices.Equal(names, []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("world after import: %v (want the leaked VM deleted, nothing else)", names)
	}

	// The rerun adopts what failed, and nothing twice.
	got, fail = nil, ""
	r = sbf(t, w.env(), "import-v1", "--delete-leaked", "--json", "--db", w.db)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := parseV1Report(t, r.stdout)
	if len(got) != 1 || got[0].Sandbox != "inst_00000001" {
		t.Errorf("rerun adopted %+v", got)
	}
	const want = "inst_00000001=import/adopt inst_00000002=skip/ inst_00000005=skip/ inst_00000003=gone/ inst_00000004=gone/"
	if classes(rep) != want {
		t.Errorf("rerun:\n got %s\nwant %s", classes(rep), want)
	}
	for _, e := range rep.Leases {
		if want := e.Action != ""; e.Done != want || e.Error != "" {
			t.Errorf("%s: action %q done %v error %q", e.InstanceID, e.Action, e.Done, e.Error)
		}
		if e.InstanceID == "inst_00000002" && !strings.Contains(e.Reason, "sbf already keeps VM agent-00000002 (sandbox inst_00000002 of "+w.wsB+")") {
			t.Errorf("inst_00000002: %s", e.Reason)
		}
	}

	// Once v1's rows run out, what sbf keeps is still not v1's leak.
	r = sbf(t, map[string]string{"SBF_V1_DRIVERS": "lima=sim,hyperv=sim", "SBF_NOW": "2026-03-26T14:00:00Z",
		"SBF_STATE_HOME": w.state}, "import-v1", "--delete-leaked", "--json", "--db", w.db)
	if rep := parseV1Report(t, r.stdout); r.code != 0 || rep.Counts[v1leases.Leaked] != 0 || rep.Counts[v1leases.Skip] != 3 {
		t.Errorf("exit %d: %s", r.code, classes(rep))
	}
	if names := simNames(t, w.wsA); !slices.Equal(names, []string{"agent-00000001", "agent-unrelated"}) {
		t.Errorf("world after the lease ran out: %v", names)
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

// blindDriver lists only sbf's names, as lima and hyperv do; seeingDriver
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

	// Through the command: the lima default, which cannot show v1's VMs
	// here (no limactl, or a List that hides them), deletes nothing.
	dir := t.TempDir()
	db := v1test.Write(t, dir, []string{v1test.Current},
		v1test.Row{ID: "inst_00000003", Backend: "lima", Root: dir, Status: "expired", Created: "2026-03-26T08:00:00Z",
			Expires: "2026-03-26T08:30:00Z", Name: "agent-00000003"})
	r := sbf(t, map[string]string{"SBF_NOW": v1Now, "SBF_STATE_HOME": dir}, "import-v1", "--delete-leaked", "--json", "--db", db)
	rep := parseV1Report(t, r.stdout)
	if r.code != 0 || classes(rep) != "inst_00000003=unseen/" || len(rep.Backends) != 1 || rep.Backends[0].Listed ||
		!slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "cannot show v1's VMs (lima)") }) {
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
