package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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
	Sandbox  string         // the ad-hoc sandbox's name: v1's instance_id (inst_XXXXXXXX), or v1SandboxName's mapping of it
	Driver   string         // the sbf driver that runs the VM
	Instance string         // the VM's backend name (agent-XXXXXXXX), kept as is
	Expires  time.Time      // v1's expires_at, kept as the lease end
	Lease    v1leases.Lease // everything else v1 knew (created_at, runtime_ready, docker_command, owner_session)
}

// listsEveryName is a backend that can list instances under any name, v1's
// agent-XXXXXXXX included (lima). A Driver's List reports only sbf's
// instances (named by sbf, or carrying sbf's label once adopted: lima
// filters by name and label, hyperv by its Notes marker), so the VMs v1
// left are invisible to it.
type listsEveryName interface {
	ListAll(ctx context.Context) ([]drivers.Instance, error)
}

// listEvery lists every instance of a backend under any name: ListAll,
// or the sim's List (its whole world). ok is false for a backend that
// can list only sbf's names.
func listEvery(ctx context.Context, d reconcile.Driver, name string) (list []drivers.Instance, ok bool, err error) {
	switch l, every := d.(listsEveryName); {
	case every:
		list, err = l.ListAll(ctx)
	case name == sim.Name:
		list, err = d.List(ctx)
	default:
		return nil, false, nil
	}
	return list, true, err
}

// v1SandboxName is the sandbox a v1 lease becomes: its instance_id when
// that is a valid sandbox name (v1's inst_XXXXXXXX always is), else a
// name derived from it deterministically (its letters and digits joined by
// '_', then '-' and 8 hex digits of its SHA-1), so a rerun maps it alike.
func v1SandboxName(id string) (name string, mapped bool) {
	if spec.ValidSandboxName(id) {
		return id, false
	}
	var b strings.Builder
	gap := false
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
		} else {
			gap = true
		}
	}
	sum := sha1.Sum([]byte(id))
	tag := hex.EncodeToString(sum[:4])
	base := b.String()
	if len(base) > 31 { // base + "-" + tag stays within the 40 characters a name may have
		base = strings.TrimRight(base[:31], "_")
	}
	if base == "" {
		return "v1-" + tag, true
	}
	return base + "-" + tag, true
}

// v1VMTypes are the vm_type values a sandbox can be declared with.
var v1VMTypes = []string{"qemu", "vz", "wsl2"}

// v1ShapeKeys are the [vm] keys an imported VM is declared with: the
// shape its backend reports (v1's database records none; v1 made the VM
// from the workspace's [vm] keys of the time, which may have changed
// since), so the next plan finds nothing to change. No mounts or ports
// either: v1's VMs have only what their Lima template gave them, which sbf
// does not manage. A vm_type sbf cannot declare is refused: the next plan
// would replace the VM.
func v1ShapeKeys(inst drivers.Instance) (map[string]any, error) {
	rep := inst.Reported
	keys := map[string]any{"mounts": []any{}, "ports": []any{}}
	if rep.CPUs > 0 {
		keys["cpus"] = int64(rep.CPUs)
	}
	if rep.MemoryGiB > 0 {
		keys["memory_gib"] = rep.MemoryGiB
	}
	if rep.DiskGiB > 0 {
		keys["disk_gib"] = rep.DiskGiB
	}
	if rep.Arch != "" {
		keys["arch"] = rep.Arch
	}
	switch {
	case rep.VMType == "":
	case slices.Contains(v1VMTypes, rep.VMType):
		keys["vm_type"] = rep.VMType
	default:
		return nil, fmt.Errorf("%s runs as vm_type %q, which a sandbox cannot be declared with (%s); "+
			"it is not imported, as sbf would replace it", inst.Name, rep.VMType, strings.Join(v1VMTypes, ", "))
	}
	return keys, nil
}

// adoptV1 adopts one v1 VM through the engine (Engine.AdoptInstance): the
// workspace's managed overrides declare the ad-hoc sandbox with an adopt
// key, the VM's shape and v1's lease; the VM gets sbf's owner label and is
// recorded (started if it was stopped). The container runtime is declared
// when v1 had made it ready, so later docker tools find it; v1's service
// containers are left as they run, undeclared. It returns notes for the
// report: a lease start moved to fit [lease] max_lifetime, or a change
// the next plan would still make to the VM.
func (a *app) adoptV1(ctx context.Context, eng *reconcile.Engine, ad v1Adoption) ([]string, error) {
	var notes []string
	r, err := spec.Load(ad.WS)
	if err != nil {
		return nil, fmt.Errorf("loading the workspace's configuration: %w", err)
	}
	drv, err := eng.Drivers(ad.Driver, r)
	if err != nil {
		return nil, err
	}
	list, ok, err := listEvery(ctx, drv, ad.Driver)
	switch {
	case err != nil:
		return nil, fmt.Errorf("listing the %s driver's instances: %w", ad.Driver, err)
	case !ok:
		return nil, fmt.Errorf("the %s driver cannot list %s", ad.Driver, ad.Instance)
	}
	i := slices.IndexFunc(list, func(inst drivers.Instance) bool { return inst.Name == ad.Instance })
	if i < 0 {
		return nil, fmt.Errorf("the %s driver no longer lists %s", ad.Driver, ad.Instance)
	}
	keys, err := v1ShapeKeys(list[i])
	if err != nil {
		return nil, err
	}
	if ad.Lease.RuntimeReady || ad.Lease.DockerCommand != "" {
		maps.Copy(keys, reconcile.BootstrapKeys(r, drv, false))
	}
	acquired := ad.Lease.CreatedAt
	if life := r.Config.Lease.MaxLifetime.Std(); !acquired.IsZero() && life > 0 && acquired.Add(life).Before(ad.Expires) {
		// v1 had no max_lifetime: a lease extended for longer than sbf's
		// would be cut short (or end at once), so it counts from later.
		acquired = ad.Expires.UTC().Truncate(time.Second).Add(-life)
		notes = append(notes, fmt.Sprintf("v1 created it at %s, longer than lease.max_lifetime (%s) before its "+
			"expiry; the lease counts from %s", ad.Lease.CreatedAt.UTC().Format(time.RFC3339), r.Config.Lease.MaxLifetime,
			acquired.Format(time.RFC3339)))
	}
	res, err := eng.AdoptInstance(ctx, ad.WS, reconcile.AdoptRequest{Sandbox: ad.Sandbox, Instance: ad.Instance,
		Driver: ad.Driver, ExpiresAt: ad.Expires, AcquiredAt: acquired, Keys: keys})
	if err != nil {
		return notes, err
	}
	if rec := res.State.Sandboxes[ad.Sandbox]; rec == nil || rec.Instance != ad.Instance {
		return notes, fmt.Errorf("sandbox %s was not recorded with VM %s", ad.Sandbox, ad.Instance)
	}
	// What converging the sandbox would still do to the VM: nothing, unless
	// the backend reports less than sbf compares.
	if next, err := eng.Plan(ctx, ad.WS, reconcile.Options{Targets: []string{ad.Sandbox}}); err == nil {
		for _, act := range next.Plan.Actions {
			if act.Sandbox == ad.Sandbox && (act.Kind == reconcile.Update || act.Kind == reconcile.Replace) {
				notes = append(notes, fmt.Sprintf("the next plan would %s it: %s", act.Kind, act.Cause))
			}
		}
	}
	return notes, nil
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
	// Sandbox is the ad-hoc sandbox an import becomes: the instance_id,
	// or a name derived from it when that is not a valid sandbox name.
	Sandbox string   `json:"sandbox,omitempty"`
	Notes   []string `json:"notes,omitempty"` // what the reader should know: a mapped name, a moved lease start
	Done    bool     `json:"done"`
	Error   string   `json:"error,omitempty"`
}

func (a *app) importV1Command() *cobra.Command {
	var f importV1Flags
	cmd := &cobra.Command{
		Use:   "import-v1",
		Short: "Take over SandboxForge v1's leases: adopt the VMs of active ones, report (and delete) leaked ones",
		Long: "import-v1 reads SandboxForge v1's lease database (read-only; LEASE_DB_PATH, else v1's default\n" +
			"state/leases.db relative to the folder v1 ran in, so --db is usually needed) and asks the backends\n" +
			"which of its VMs still exist. Stop v1 first.\n\n" +
			"Each active lease whose VM exists becomes an ad-hoc sandbox of its workspace (v1's workspace_root),\n" +
			"named by its v1 instance_id (an id that is not a valid sandbox name is mapped to one, and the report\n" +
			"says which), so v1's MCP clients keep using the id. The VM is adopted as it is, under its v1 name:\n" +
			"sbf labels it as the sandbox's, records it and keeps v1's expiry, after which the loop of sbf mcp or\n" +
			"sbf serve (or sbf reconcile in the workspace) deletes it like any other. It is declared with the cpus,\n" +
			"memory, disk, arch and vm_type its backend reports and no mounts or ports, so no plan restarts or\n" +
			"replaces it; the container runtime is declared when v1 had made it ready. Only\n" +
			".sandboxforge/overrides.toml and sbf's state are written in the workspace.\n\n" +
			"The workspace's configuration is read as for any sbf command: .sandboxforge.toml or v1's\n" +
			".orbitforge.toml and .lima-mcp.toml, and the global files. A workspace with none of them is imported\n" +
			"with the built-in defaults (v1's) and kept by sbf mcp and sbf serve as v1 kept it; sbf's CLI commands\n" +
			"there (status, reconcile, destroy) need a .sandboxforge.toml, and an empty one will do.\n\n" +
			"Expired, destroyed or failed leases whose VMs still exist are reported as leaked; --delete-leaked\n" +
			"deletes those VMs. Leases on backends that cannot list v1's VMs (hyperv) are reported as unseen and\n" +
			"left alone. Rerunning is safe: what sbf keeps already is skipped.",
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
	var retry map[string]bool
	if inv.Held, retry, err = a.heldInstances(inv.labelled, db.Leases, dm); err != nil {
		return a.reportError(err, f.asJSON)
	}
	// Classify under the sandbox names the leases become, so an id that is
	// not a valid sandbox name is mapped rather than skipped; the report
	// shows v1's ids.
	leases, v1IDs := slices.Clone(db.Leases), map[string]string{}
	for i, l := range leases {
		if name, mapped := v1SandboxName(l.InstanceID); mapped {
			leases[i].InstanceID, v1IDs[name] = name, l.InstanceID
		}
	}
	report := v1leases.Classify(leases, inv.Inventory, v1leases.Options{Now: now, Drivers: dm, DirExists: isDir})

	rep := &v1ImportReport{DB: db.Path, Schema: db.Schema, Now: now, DryRun: f.dryRun, DeleteLeaked: f.deleteLeaked,
		Backends: []v1Backend{}, Leases: []v1ImportEntry{}, Counts: report.Counts, Notes: []string{}}
	for _, d := range slices.Sorted(maps.Keys(inv.used)) {
		names, listed := inv.Listed[d]
		rep.Backends = append(rep.Backends, v1Backend{Driver: d, Listed: listed, Instances: len(names), Why: inv.Unlisted[d]})
	}
	for _, e := range report.Entries {
		ie := v1ImportEntry{Entry: e}
		id, mapped := v1IDs[e.InstanceID]
		if mapped {
			ie.InstanceID = id
		}
		switch {
		case e.Class == v1leases.Import:
			ie.Action, ie.Sandbox = "adopt", e.InstanceID
			if mapped {
				ie.Notes = append(ie.Notes, fmt.Sprintf("v1's id %q is not a valid sbf sandbox name, so the sandbox is "+
					"named %s; v1 clients must use that name", id, e.InstanceID))
			}
			if retry[ie.InstanceID] {
				ie.Notes = append(ie.Notes, "an earlier import of it did not finish; importing it again")
			}
			if !spec.HasSpec(e.WorkspaceRoot) {
				ie.Notes = append(ie.Notes, fmt.Sprintf("no %s (nor v1's .orbitforge.toml, .lima-mcp.toml) in the workspace: "+
					"built-in defaults apply; sbf mcp and sbf serve expire the sandbox, sbf's CLI commands there need "+
					"the file (an empty one will do)", spec.FileName))
			}
		case e.Class == v1leases.Leaked && f.deleteLeaked:
			ie.Action = "delete"
		}
		rep.Leases = append(rep.Leases, ie)
	}
	rep.notes(report.Counts, f)

	var failed error
	switch {
	case f.dryRun:
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
			var notes []string
			notes, err = a.adoptV1(ctx, eng, v1Adoption{
				WS:      spec.Options{Root: e.WorkspaceRoot, Host: spec.CurrentHost(), ConfigHome: a.configHome()},
				Sandbox: e.Sandbox, Driver: e.Driver, Instance: e.BackendInstance, Expires: e.ExpiresAt, Lease: e.Lease,
			})
			e.Notes = append(e.Notes, notes...)
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
			if len(e.Notes) > 0 {
				why += " (" + strings.Join(e.Notes, "; ") + ")"
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
// VM imported before is one of them. One exception: a VM the index records
// as the very sandbox a lease becomes, in the lease's workspace, but that
// carries no label, is an import that failed (or was interrupted) before
// its claim; it is not held, so the lease is imported again (adopting is
// safe to repeat). retry names those leases by instance_id.
func (a *app) heldInstances(labelled map[string]map[string]string, leases []v1leases.Lease, dm map[string]string) (
	held map[string]map[string]string, retry map[string]bool, err error) {
	all, err := state.OpenHostIndex(a.hostDir()).All()
	if err != nil {
		return nil, nil, err
	}
	canonical := func(root string) string {
		if abs, _, err := spec.WorkspaceIdentity(root); err == nil {
			return abs
		}
		return root
	}
	type key struct{ driver, vm, sandbox, root string }
	unfinished := map[key]string{}
	for _, l := range leases {
		if d, ok := dm[strings.ToLower(strings.TrimSpace(l.Backend))]; ok && l.BackendInstance != "" && l.WorkspaceRoot != "" {
			name, _ := v1SandboxName(l.InstanceID)
			unfinished[key{d, l.BackendInstance, name, canonical(l.WorkspaceRoot)}] = l.InstanceID
		}
	}
	retry = map[string]bool{}
	held = map[string]map[string]string{}
	add := func(driver, vm, what string) {
		if held[driver] == nil {
			held[driver] = map[string]string{}
		}
		if _, ok := held[driver][vm]; !ok {
			held[driver][vm] = what
		}
	}
	for _, e := range all {
		if _, ok := labelled[e.Driver][e.Instance]; !ok {
			if id, ok := unfinished[key{e.Driver, e.Instance, e.Sandbox, canonical(e.WorkspaceRoot)}]; ok {
				retry[id] = true
				continue
			}
		}
		add(e.Driver, e.Instance, fmt.Sprintf("sandbox %s of %s", e.Sandbox, e.WorkspaceRoot))
	}
	for driver, vms := range labelled {
		for vm, what := range vms {
			add(driver, vm, what)
		}
	}
	return held, retry, nil
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
			list, every, err := listEvery(ctx, d, name)
			if !every {
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
