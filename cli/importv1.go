package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/v1import"
	"github.com/sandboxforge/sbf/v1import/leases"
)

type importV1Flags struct {
	db           string
	dryRun       bool
	deleteLeaked bool
	asJSON       bool
}

// v1ImportReport is import-v1's --json output.
type v1ImportReport struct {
	DB           string               `json:"db"`
	Schema       leases.Schema        `json:"schema"`
	Now          time.Time            `json:"now"`
	DryRun       bool                 `json:"dry_run"`
	DeleteLeaked bool                 `json:"delete_leaked"`
	Backends     []v1import.Backend   `json:"backends"`
	Leases       []v1import.Entry     `json:"leases"`
	Counts       map[leases.Class]int `json:"counts"`
	Notes        []string             `json:"notes"`
	Error        *coded.Error         `json:"error"`
}

const importV1Short = "Take over SandboxForge v1's leases: adopt the VMs of active ones, report (and delete) " +
	"leaked ones"

func (a *app) importV1Command() *cobra.Command {
	if a.server != nil { // sbf-server links no SQLite (leases.DriverName): sbf reads v1's database
		return a.handOffCommand("import-v1", importV1Short, a.sbfBinary)
	}
	var f importV1Flags
	cmd := &cobra.Command{
		Use:   "import-v1",
		Short: importV1Short,
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
			return a.importV1(a.context(), f, cmd.Flags().Changed("db"))
		},
	}
	cmd.Flags().StringVar(&f.db, "db", "", "v1's lease database `PATH` (default: $LEASE_DB_PATH, else state/leases.db)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print what would be imported and deleted; change nothing")
	cmd.Flags().BoolVar(&f.deleteLeaked, "delete-leaked", false,
		"delete the VMs v1 leaked (its lease is over but the VM exists)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) importV1(ctx context.Context, f importV1Flags, dbFlag bool) error {
	src, err := a.v1Source(f, dbFlag)
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	eng, err := a.engine("import-v1", engineFlags{})
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	inv, err := v1import.TakeInventory(ctx, eng, src)
	if errors.Is(err, fs.ErrNotExist) {
		err = a.noV1Database(src.DB, dbFlag)
	}
	if err != nil {
		return a.reportError(err, f.asJSON)
	}
	opts := v1import.Options{DeleteLeaked: f.deleteLeaked,
		Workspace: spec.Options{Host: spec.CurrentHost(), ConfigHome: a.configHome()}}
	var rep *v1ImportReport
	var failed error
	if f.dryRun {
		rep = newV1ImportReport(inv.Plan(opts), true, nil)
	} else {
		var ran *v1import.Report
		ran, failed = v1import.Run(ctx, eng, inv, opts)
		rep = newV1ImportReport(&ran.Plan, false, failed)
	}
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

// v1Source is where v1's database is (--db, else LEASE_DB_PATH, else v1's
// default) and which sbf drivers stand for v1's backends.
func (a *app) v1Source(f importV1Flags, dbFlag bool) (v1import.Source, error) {
	src := v1import.Source{DB: f.db}
	if !dbFlag {
		src.DB, _ = leases.DBPath(a.getenv)
	}
	var err error
	src.Drivers, err = a.v1Drivers()
	return src, err
}

// noV1Database says that v1's database is not where sbf looked, and how to
// point sbf at it.
func (a *app) noV1Database(path string, dbFlag bool) error {
	abs, _ := filepath.Abs(path)
	_, fromEnv := leases.DBPath(a.getenv)
	switch {
	case dbFlag:
		return fmt.Errorf("--db %s: no such file", abs)
	case fromEnv:
		return fmt.Errorf("no v1 lease database at %s (%s=%s); pass --db PATH", abs, leases.EnvDBPath, path)
	default:
		return fmt.Errorf("no v1 lease database at %s: that is v1's default (%s is unset), relative to the folder "+
			"v1 ran in; pass --db PATH (v1's leases.db) or set %s", abs, leases.EnvDBPath, leases.EnvDBPath)
	}
}

// v1Drivers maps v1's backend names to sbf drivers: nil (v1import's
// default), or what SBF_V1_DRIVERS says (a test hook: "lima=sim,hyperv=sim").
func (a *app) v1Drivers() (map[string]string, error) {
	v := a.getenv("SBF_V1_DRIVERS")
	if v == "" {
		return nil, nil
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

// newV1ImportReport is what --json prints of a plan (a dry run) or of
// what ran, and what failed.
func newV1ImportReport(p *v1import.Plan, dryRun bool, failed error) *v1ImportReport {
	rep := &v1ImportReport{DB: p.DB, Schema: p.Schema, Now: p.Now, DryRun: dryRun, DeleteLeaked: p.DeleteLeaked,
		Backends: p.Backends, Leases: p.Leases, Counts: p.Counts, Notes: []string{}, Error: coded.Of(failed, coded.Unknown)}
	rep.notes()
	return rep
}

// notes are what the reader should know about the whole import.
func (rep *v1ImportReport) notes() {
	counts := rep.Counts
	add := func(format string, args ...any) { rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...)) }
	if n := counts[leases.Import]; n > 0 {
		add("%d active v1 lease(s) to import; stop v1 first: a running v1 keeps serving and sweeping its leases", n)
	}
	if n := counts[leases.Leaked]; n > 0 && !rep.DeleteLeaked {
		add("%d VM(s) v1 leaked; --delete-leaked deletes them", n)
	}
	if n := counts[leases.Unseen]; n > 0 {
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
			case e.Class == leases.Unseen: // why is on the driver's line above
				why = "unknown whether it still exists: the " + e.Driver + " driver could not be asked"
			case e.Error != "":
				why = string(e.Action) + " failed: " + e.Error
			case e.Done && e.Action == v1import.Adopt:
				why = "adopted: " + why
			case e.Done:
				why = "deleted: " + why
			}
			if len(e.Notes) > 0 {
				why += " (" + strings.Join(e.Notes, "; ") + ")"
			}
			t.row(e.InstanceID, string(e.Class), orDash(e.Driver), orDash(e.BackendInstance), expires,
				orDash(e.WorkspaceRoot), why)
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
