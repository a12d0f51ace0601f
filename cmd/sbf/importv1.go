package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/v1leases"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// v1Adoption is one SandboxForge v1 lease to take over: its VM, as it is,
// becomes the ad-hoc sandbox Sandbox of the workspace WS, leased until
// Expires, so v1 clients' instance ids keep working and the loop deletes
// the VM when the lease ends.
type v1Adoption struct {
	WS       spec.Options   // the lease's workspace (WS.Root is its workspace_root)
	Sandbox  string         // v1's instance_id (inst_XXXXXXXX), the ad-hoc sandbox's name
	Driver   string         // the sbf driver that runs the VM
	Instance string         // the VM's backend name (agent-XXXXXXXX), kept as is
	Expires  time.Time      // v1's expires_at, kept as the lease end
	Lease    v1leases.Lease // everything else v1 knew (runtime_ready, docker_command, owner_session)
}

// adoptV1 adopts one v1 VM through the engine: write the owner label, record
// the ad-hoc sandbox and its lease. It is nil until the engine can adopt a
// named existing instance; until then import-v1 imports nothing.
var adoptV1 func(ctx context.Context, eng *reconcile.Engine, ad v1Adoption) error

// listsEveryName is a backend that can list instances under any name, v1's
// agent-XXXXXXXX included. A Driver's List reports only sbf's instances
// (named by sbf, or carrying sbf's label once adopted: lima filters by
// name and label, hyperv by its Notes marker), so the VMs v1 left are
// invisible to it; no backend has this yet.
type listsEveryName interface {
	ListAll(ctx context.Context) ([]drivers.Instance, error)
}

type importV1Flags struct {
	db           string
	dryRun       bool
	deleteLeaked bool
	asJSON       bool
}

// v1ImportReport is import-v1's --json output.
type v1ImportReport struct {
	DB           string                 `json:"db"`
	Schema       v1leases.Schema        `json:"schema"`
	Now          time.Time              `json:"now"`
	DryRun       bool                   `json:"dry_run"`
	DeleteLeaked bool                   `json:"delete_leaked"`
	Backends     []v1Backend            `json:"backends"`
	Leases       []v1ImportEntry        `json:"leases"`
	Counts       map[v1leases.Class]int `json:"counts"`
	Notes        []string               `json:"notes"`
	Error        *coded.Error           `json:"error"`
}

// v1Backend says whether a driver v1's leases use could be asked which VMs
// exist.
type v1Backend struct {
	Driver    string `json:"driver"`
	Listed    bool   `json:"listed"`
	Instances int    `json:"instances"` // how many it listed, under any name
	Why       string `json:"why,omitempty"`
}

// v1ImportEntry is one lease, what it means and what was done.
type v1ImportEntry struct {
	v1leases.Entry
	Action string `json:"action,omitempty"` // adopt (import) or delete (leaked, with --delete-leaked)
	Done   bool   `json:"done"`
	Error  string `json:"error,omitempty"`
}

func (a *app) importV1Command() *cobra.Command {
	var f importV1Flags
	cmd := &cobra.Command{
		Use:   "import-v1",
		Short: "Take over SandboxForge v1's leases: adopt the VMs of active ones, report (and delete) leaked ones",
		Long: "import-v1 reads SandboxForge v1's lease database (read-only; LEASE_DB_PATH, else v1's default\n" +
			"state/leases.db relative to the folder v1 ran in, so --db is usually needed) and asks the backends\n" +
			"which of its VMs still exist. Each active lease whose VM exists becomes an ad-hoc sandbox named by its\n" +
			"v1 instance_id in its workspace, adopting the VM with its expiry kept. Expired, destroyed or failed\n" +
			"leases whose VMs still exist are reported as leaked; --delete-leaked deletes those VMs. Stop v1 first.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.importV1(context.Background(), f, cmd.Flags().Changed("db"))
		},
	}
	cmd.Flags().StringVar(&f.db, "db", "", "v1's lease database `PATH` (default: $LEASE_DB_PATH, else state/leases.db)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print what would be imported and deleted; change nothing")
	cmd.Flags().BoolVar(&f.deleteLeaked, "delete-leaked", false, "delete the VMs v1 leaked (its lease is over but the VM exists)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) importV1(ctx context.Context, f importV1Flags, dbFlag bool) error {
	path, fromEnv := f.db, false
	if !dbFlag {
		path, fromEnv = v1leases.DBPath(a.getenv)
	}
	db, err := v1leases.Read(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		abs, _ := filepath.Abs(path)
		switch {
		case dbFlag:
			err = fmt.Errorf("--db %s: no such file", abs)
		case fromEnv:
			err = fmt.Errorf("no v1 lease database at %s (%s=%s); pass --db PATH", abs, v1leases.EnvDBPath, path)
		default:
			err = fmt.Errorf("no v1 lease database at %s: that is v1's default (%s is unset), relative to the folder "+
				"v1 ran in; pass --db PATH (v1's leases.db) or set %s", abs, v1leases.EnvDBPath, v1leases.EnvDBPath)
		}
	}
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	dm, err := a.v1Drivers()
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	c, err := a.clock()
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	now := c.Now().UTC()
	inv := a.v1Inventory(ctx, reconcile.Backends(a.driverEnv(c)), db.Leases, dm)
	if inv.Held, err = a.heldInstances(inv.labelled); err != nil {
		return a.reportError(err, f.asJSON)
	}
	report := v1leases.Classify(db.Leases, inv.Inventory, v1leases.Options{Now: now, Drivers: dm, DirExists: isDir})

	rep := &v1ImportReport{DB: db.Path, Schema: db.Schema, Now: now, DryRun: f.dryRun, DeleteLeaked: f.deleteLeaked,
		Backends: []v1Backend{}, Leases: []v1ImportEntry{}, Counts: report.Counts, Notes: []string{}}
	for _, d := range slices.Sorted(maps.Keys(inv.used)) {
		names, listed := inv.Listed[d]
		rep.Backends = append(rep.Backends, v1Backend{Driver: d, Listed: listed, Instances: len(names), Why: inv.Unlisted[d]})
	}
	for _, e := range report.Entries {
		ie := v1ImportEntry{Entry: e}
		switch {
		case e.Class == v1leases.Import:
			ie.Action = "adopt"
		case e.Class == v1leases.Leaked && f.deleteLeaked:
			ie.Action = "delete"
		}
		rep.Leases = append(rep.Leases, ie)
	}
	rep.notes(report.Counts, f)

	var failed error
	switch {
	case f.dryRun:
	case report.Counts[v1leases.Import] > 0 && adoptV1 == nil:
		failed = errors.New("importing needs instance adoption, not built yet; --dry-run shows the plan")
	default:
		failed = a.runV1Import(ctx, rep, inv)
	}
	rep.Error = coded.Of(failed, coded.Unknown)
	if f.asJSON {
		if err := writeJSON(a.stdout, rep); err != nil {
			return err
		}
		if failed != nil {
			return silentExit(1)
		}
		return nil
	}
	a.printV1Import(rep)
	return failed
}

// runV1Import adopts, then deletes (with --delete-leaked), each lease its
// action names, and says whether any failed.
func (a *app) runV1Import(ctx context.Context, rep *v1ImportReport, inv v1Inventory) error {
	var eng *reconcile.Engine
	failures := 0
	for i := range rep.Leases {
		e := &rep.Leases[i]
		var err error
		switch e.Action {
		case "adopt":
			if eng == nil {
				if eng, err = a.engine("import-v1", engineFlags{}); err != nil {
					return err
				}
			}
			err = adoptV1(ctx, eng, v1Adoption{
				WS:      spec.Options{Root: e.WorkspaceRoot, Host: spec.CurrentHost(), ConfigHome: a.configHome()},
				Sandbox: e.InstanceID, Driver: e.Driver, Instance: e.BackendInstance, Expires: e.ExpiresAt, Lease: e.Lease,
			})
		case "delete":
			// Only a VM v1's database calls its own (a lease it is done
			// with) and that the backend lists right now.
			d := inv.owner[e.Driver][e.BackendInstance]
			if d == nil {
				err = fmt.Errorf("the %s driver no longer lists %s", e.Driver, e.BackendInstance)
				break
			}
			if err = d.Delete(ctx, e.BackendInstance); errors.Is(err, drivers.ErrNotFound) {
				err = nil // gone already: what deleting wanted
			}
		default:
			continue
		}
		if err != nil {
			e.Error = err.Error()
			failures++
			continue
		}
		e.Done = true
	}
	if failures > 0 {
		return fmt.Errorf("%d of the v1 leases could not be taken over; see the report", failures)
	}
	return nil
}

func (rep *v1ImportReport) notes(counts map[v1leases.Class]int, f importV1Flags) {
	add := func(format string, args ...any) { rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...)) }
	if n := counts[v1leases.Import]; n > 0 {
		add("%d active v1 lease(s) to import; stop v1 first: a running v1 keeps serving and sweeping its leases", n)
	}
	if n := counts[v1leases.Leaked]; n > 0 && !f.deleteLeaked {
		add("%d VM(s) v1 leaked; --delete-leaked deletes them", n)
	}
	if n := counts[v1leases.Unseen]; n > 0 {
		var blind []string
		for _, b := range rep.Backends {
			if !b.Listed {
				blind = append(blind, b.Driver)
			}
		}
		add("%d lease(s) are on backends that cannot show v1's VMs (%s): whether those exist is unknown, so none of "+
			"them is imported or deleted", n, strings.Join(blind, ", "))
	}
}

func (a *app) printV1Import(rep *v1ImportReport) {
	fmt.Fprintf(a.stdout, "v1 lease database %s (%s schema): %d lease(s)\n", rep.DB, rep.Schema, len(rep.Leases))
	for _, b := range rep.Backends {
		if b.Listed {
			fmt.Fprintf(a.stdout, "  %s: %d instance(s) listed\n", b.Driver, b.Instances)
		} else {
			fmt.Fprintf(a.stdout, "  %s: not listed: %s\n", b.Driver, b.Why)
		}
	}
	if len(rep.Leases) > 0 {
		t := newTable(a.stdout, "INSTANCE", "CLASS", "DRIVER", "VM", "EXPIRES", "WORKSPACE", "WHY")
		for _, e := range rep.Leases {
			expires := "-"
			if !e.ExpiresAt.IsZero() {
				expires = e.ExpiresAt.UTC().Format(time.RFC3339)
			}
			why := e.Reason
			switch {
			case e.Class == v1leases.Unseen: // why is on the driver's line above
				why = "unknown whether it still exists: the " + e.Driver + " driver could not be asked"
			case e.Error != "":
				why = e.Action + " failed: " + e.Error
			case e.Done && e.Action == "adopt":
				why = "adopted: " + why
			case e.Done:
				why = "deleted: " + why
			}
			t.row(e.InstanceID, string(e.Class), dash(e.Driver), dash(e.BackendInstance), expires, dash(e.WorkspaceRoot), why)
		}
		t.flush()
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(a.stdout, "Note: "+n+".")
	}
	if rep.DryRun {
		fmt.Fprintln(a.stdout, "Dry run: nothing changed.")
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// heldInstances are the instances sbf keeps, by driver: those its host
// index lists and those a backend listed with sbf's label (labelled). A v1
// VM imported before is one of them.
func (a *app) heldInstances(labelled map[string]map[string]string) (map[string]map[string]string, error) {
	all, err := state.OpenHostIndex(a.hostDir()).All()
	if err != nil {
		return nil, err
	}
	held := map[string]map[string]string{}
	add := func(driver, vm, what string) {
		if held[driver] == nil {
			held[driver] = map[string]string{}
		}
		if _, ok := held[driver][vm]; !ok {
			held[driver][vm] = what
		}
	}
	for _, e := range all {
		add(e.Driver, e.Instance, fmt.Sprintf("sandbox %s of %s", e.Sandbox, e.WorkspaceRoot))
	}
	for driver, vms := range labelled {
		for vm, what := range vms {
			add(driver, vm, what)
		}
	}
	return held, nil
}

// v1Drivers maps v1's backend names to sbf drivers: v1leases.Drivers, or
// what SBF_V1_DRIVERS says (a test hook: "lima=sim,hyperv=sim").
func (a *app) v1Drivers() (map[string]string, error) {
	v := a.getenv("SBF_V1_DRIVERS")
	if v == "" {
		return v1leases.Drivers, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("SBF_V1_DRIVERS=%q: want v1 backends mapped to sbf drivers, such as lima=sim", v)
		}
		m[from] = to
	}
	return m, nil
}

// v1Inventory is what the backends v1's leases use list, and which driver
// value listed each VM (deleting goes through it).
type v1Inventory struct {
	v1leases.Inventory
	used  map[string]bool                        // the sbf drivers v1's leases map to
	owner map[string]map[string]reconcile.Driver // driver → VM name → the driver that lists it
	// labelled are the listed VMs carrying sbf's label (an owner, or a
	// pool's): driver → VM name → what the label says.
	labelled map[string]map[string]string
}

// v1Inventory lists, once each, the drivers v1's leases map to; a backend
// kept per workspace (sim) is listed in each lease's workspace. A backend
// that lists only sbf's names is not asked: it cannot show v1's VMs.
func (a *app) v1Inventory(ctx context.Context, get reconcile.DriverFactory, leases []v1leases.Lease, dm map[string]string) v1Inventory {
	inv := v1Inventory{
		Inventory: v1leases.Inventory{Listed: map[string]map[string]bool{}, Unlisted: map[string]string{}},
		used:      map[string]bool{},
		owner:     map[string]map[string]reconcile.Driver{},
		labelled:  map[string]map[string]string{},
	}
	roots := map[string]map[string]bool{}
	for _, l := range leases {
		if d, ok := dm[strings.ToLower(strings.TrimSpace(l.Backend))]; ok {
			inv.used[d] = true
			if roots[d] == nil {
				roots[d] = map[string]bool{}
			}
			if filepath.IsAbs(l.WorkspaceRoot) && isDir(l.WorkspaceRoot) {
				roots[d][l.WorkspaceRoot] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inv.used)) {
		reg, ok := drivers.Lookup(name)
		if !ok {
			inv.Unlisted[name] = drivers.NotBuiltIn(name).Error()
			continue
		}
		var where []*spec.Resolved
		if reg.PerWorkspace {
			for _, r := range slices.Sorted(maps.Keys(roots[name])) {
				where = append(where, &spec.Resolved{Root: r})
			}
			if len(where) == 0 {
				inv.Unlisted[name] = "it keeps its instances per workspace and no lease on it names a workspace here"
				continue
			}
		} else {
			where = []*spec.Resolved{nil}
		}
		names, owner, labelled := map[string]bool{}, map[string]reconcile.Driver{}, map[string]string{}
		var why string
		for _, r := range where {
			d, err := get(name, r)
			if err != nil {
				why = err.Error()
				break
			}
			var list []drivers.Instance
			switch l, ok := d.(listsEveryName); {
			case ok:
				list, err = l.ListAll(ctx)
			case name == sim.Name: // its List is its whole world
				list, err = d.List(ctx)
			default:
				why = fmt.Sprintf("the %s driver lists only instances sbf named (%s…) or labelled, so v1's VMs "+
					"(agent-…) are invisible to it until it can list instances under any name", name, drivers.Prefix)
			}
			if err != nil {
				why = "listing its instances: " + err.Error()
			}
			if why != "" {
				break
			}
			for _, inst := range list {
				names[inst.Name] = true
				if owner[inst.Name] == nil {
					owner[inst.Name] = d
				}
				switch l := inst.Label; {
				case l == nil:
				case l.Owner != nil:
					labelled[inst.Name] = "labelled as " + l.Owner.String()
				case l.Spare != nil:
					labelled[inst.Name] = "labelled as a spare of pool " + l.Spare.Pool
				}
			}
		}
		if why != "" {
			inv.Unlisted[name] = why
			continue
		}
		inv.Listed[name] = names
		inv.owner[name] = owner
		inv.labelled[name] = labelled
	}
	return inv
}
