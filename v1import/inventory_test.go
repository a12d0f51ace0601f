package v1import

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/v1import/leases"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

// The inventory of both of v1's schemas, and its plans: what each lease
// means and would become, and nothing changed.
func TestTakeInventoryAndPlan(t *testing.T) {
	for _, schema := range []struct{ name, stmt string }{{"current", v1test.Current}, {"legacy", v1test.Legacy}} {
		t.Run(schema.name, func(t *testing.T) {
			w := newWorld(t, schema.stmt)
			inv, err := TakeInventory(context.Background(), w.engine(t, v1Now), w.src())
			if err != nil {
				t.Fatal(err)
			}
			if got := classes(inv.Leases); got != wantClasses {
				t.Errorf("classes:\n got %s\nwant %s", got, wantClasses)
			}
			if inv.Schema != leases.Schema(schema.name) || inv.DB != w.db || inv.Now.Format(time.RFC3339) != v1Now {
				t.Errorf("inventory = %+v", inv)
			}
			if len(inv.Backends) != 1 || inv.Backends[0] != (Backend{Driver: "sim", Listed: true, Instances: 4}) {
				t.Errorf("backends = %+v", inv.Backends)
			}
			if c := inv.Counts; c[leases.Import] != 2 || c[leases.Leaked] != 1 || c[leases.Gone] != 1 ||
				c[leases.Skip] != 1 || c[leases.Unseen] != 0 {
				t.Errorf("counts = %v", c)
			}
			first := inv.Leases[0]
			if first.BackendInstance != "agent-00000001" || first.Driver != "sim" || first.WorkspaceRoot != w.wsA ||
				!first.RuntimeReady || first.DockerCommand != "docker" || first.Done || first.Sandbox != "inst_00000001" ||
				first.ExpiresAt.Format(time.RFC3339) != "2026-03-26T12:30:00Z" {
				t.Errorf("first lease = %+v", first)
			}
			if p := inv.Plan(options(false)); classes(p.Leases) != wantClasses || p.DeleteLeaked {
				t.Errorf("plan: %s", classes(p.Leases))
			}
			p := inv.Plan(options(true))
			if want := strings.Replace(wantClasses, "leaked/", "leaked/delete", 1); classes(p.Leases) != want {
				t.Errorf("plan with deleting:\n got %s\nwant %s", classes(p.Leases), want)
			}
			for _, e := range p.Leases {
				if e.Done || (e.Action == Adopt) != (e.Sandbox != "") {
					t.Errorf("%s: %+v", e.InstanceID, e)
				}
			}
			w.checkUntouched(t)
		})
	}
}

// checkUntouched says whether the world is as newWorld made it: no
// declaration, no state, no label, no VM less.
func (w world) checkUntouched(t *testing.T) {
	t.Helper()
	if got := files(w.wsA, w.wsB); len(got) != 0 {
		t.Errorf("wrote %v", slices.Sorted(maps.Keys(got)))
	}
	for _, root := range []string{w.wsA, w.wsB} {
		for name, inst := range w.vms(t, root) {
			if inst.Label != nil {
				t.Errorf("labelled %s: %+v", name, inst.Label)
			}
		}
	}
	if got := w.names(t, w.wsA); !slices.Equal(got, []string{"agent-00000001", "agent-00000003", "agent-unrelated"}) {
		t.Errorf("world changed: %v", got)
	}
	if entries, err := state.OpenHostIndex(w.host).All(); err != nil || len(entries) != 0 {
		t.Errorf("host index: %v %v", entries, err)
	}
}

// A VM carrying sbf's label (adopted by sbf, whatever its host index says)
// is sbf's: never deleted as v1's leak nor adopted again.
func TestTakeInventoryLeavesLabelledVMs(t *testing.T) {
	w := newWorld(t, v1test.Current)
	for _, vm := range []string{"agent-00000001", "agent-00000003"} {
		owner := drivers.Owner{WorkspaceID: "ws_0123456789ab", Sandbox: "mine"}
		if err := w.sim(t, w.wsA).Claim(context.Background(), vm, owner); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := TakeInventory(context.Background(), w.engine(t, v1Now), w.src())
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Plan(options(true))
	const want = "inst_00000002=import/adopt inst_00000001=skip/ inst_00000003=skip/ inst_00000005=skip/ " +
		"inst_00000004=gone/"
	if classes(p.Leases) != want {
		t.Fatalf("\n got %s\nwant %s", classes(p.Leases), want)
	}
	const reason = "sbf already keeps VM agent-00000003 (labelled as sandbox mine of workspace ws_0123456789ab)"
	if e := p.Leases[2]; !strings.Contains(e.Reason, reason) {
		t.Errorf("reason: %s", e.Reason)
	}
}

// A v1 that never leased anything: empty lists, not nil ones.
func TestTakeInventoryEmptyDB(t *testing.T) {
	host := t.TempDir()
	w := world{host: host, db: v1test.Write(t, host, v1test.Concat([]string{v1test.Current}, v1test.Indexes))}
	inv, err := TakeInventory(context.Background(), w.engine(t, v1Now), Source{DB: w.db})
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Plan(options(true))
	if p.Leases == nil || p.Backends == nil || len(p.Leases)+len(p.Backends) != 0 || p.Schema != leases.Current {
		t.Errorf("plan = %+v", p)
	}
	rep, err := Run(context.Background(), w.engine(t, v1Now), inv, options(true))
	if err != nil || rep.Leases == nil || len(rep.Leases) != 0 {
		t.Errorf("run = %+v, %v", rep, err)
	}
}

// A database that is not there says so in a way a caller can tell.
func TestTakeInventoryMissingDB(t *testing.T) {
	w := world{host: t.TempDir()}
	_, err := TakeInventory(context.Background(), w.engine(t, v1Now), Source{DB: filepath.Join(w.host, "x.db")})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v", err)
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
func TestListBackendsBlind(t *testing.T) {
	ls := []leases.Lease{
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
	inv := listBackends(context.Background(), get, ls, map[string]string{"lima": "lima", "hyperv": "hyperv", "vz": "vz"})
	const blind = "lists only instances sbf named (sbf-…) or labelled, so v1's VMs (agent-…) are invisible"
	if why := inv.Unlisted["lima"]; !strings.Contains(why, blind) {
		t.Errorf("lima: %q", why)
	}
	if names := inv.Listed["hyperv"]; len(names) != 2 || !names["agent-00000001"] ||
		inv.owner["hyperv"]["agent-00000001"] == nil {
		t.Errorf("hyperv: %v", names)
	}
	if why := inv.Unlisted["vz"]; !strings.Contains(why, "not on this host") {
		t.Errorf("vz: %q", why)
	}
	if _, ok := inv.Listed["lima"]; ok {
		t.Error("lima counts as listed")
	}
}
