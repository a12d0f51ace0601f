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
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	v1leases "github.com/sandboxforge/sbf/v1import/leases"
)

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
			t.row(e.InstanceID, string(e.Class), orDash(e.Driver), orDash(e.BackendInstance), expires, orDash(e.WorkspaceRoot), why)
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

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
