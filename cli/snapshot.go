package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// snapshotCommand is `sbf snapshot create|list|restore|delete`: each
// builds a request, the engine decides and does it.
func (a *app) snapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Take, list, restore, delete, export and import snapshots of a sandbox's VM",
		Long: "A snapshot keeps a sandbox's VM as it is (Lima with vm_type qemu: its disk, and its memory while it\n" +
			"runs; the sim: its guest folder) under a name of the sandbox's, until it is deleted or the sandbox\n" +
			"ends. Drivers that keep none (hyperv, vz, kubevirt for now) answer SNAPSHOT_UNSUPPORTED.\n" +
			"export writes one into a new host file (never over an existing one) that outlives the sandbox and\n" +
			"that sbf never deletes; import makes such a file a new snapshot of a sandbox on the same driver.\n" +
			"Both paths lie inside the workspace or a folder allowed with --allow-path. A Lima export is the\n" +
			"disk only (no memory): restoring it restarts the VM.",
	}
	for _, op := range []struct {
		op    reconcile.SnapshotOp
		use   string
		short string
	}{
		{reconcile.SnapshotCreate, "create NAME SNAPSHOT", "Take a snapshot of a sandbox's VM"},
		{reconcile.SnapshotRestore, "restore NAME SNAPSHOT",
			"Bring a sandbox's VM back to a snapshot (what was written since is lost)"},
		{reconcile.SnapshotDelete, "delete NAME SNAPSHOT", "Delete a snapshot"},
		{reconcile.SnapshotList, "list NAME", "List a sandbox's snapshots"},
		{reconcile.SnapshotExport, "export NAME SNAPSHOT PATH", "Write a snapshot into a new host file"},
		{reconcile.SnapshotImport, "import NAME SNAPSHOT PATH", "Make an exported file a new snapshot of a sandbox"},
	} {
		cmd.AddCommand(a.snapshotOpCommand(op.op, op.use, op.short))
	}
	return cmd
}

func (a *app) snapshotOpCommand(op reconcile.SnapshotOp, use, short string) *cobra.Command {
	var asJSON bool
	n := map[reconcile.SnapshotOp]int{reconcile.SnapshotList: 1, reconcile.SnapshotExport: 3,
		reconcile.SnapshotImport: 3}[op]
	if n == 0 {
		n = 2
	}
	complete := a.completeSandbox
	switch op {
	case reconcile.SnapshotRestore, reconcile.SnapshotDelete, reconcile.SnapshotExport:
		complete = a.completeSnapshot // an existing snapshot
	case reconcile.SnapshotImport:
		complete = func(c *cobra.Command, list []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(list) == 2 {
				return nil, cobra.ShellCompDirectiveDefault // the file
			}
			return a.completeSandbox(c, list, s)
		}
	}
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              args(cobra.ExactArgs(n)),
		ValidArgsFunction: complete,
		RunE: func(_ *cobra.Command, list []string) error {
			req := reconcile.SnapshotRequest{Op: op, Sandbox: list[0]}
			if n >= 2 {
				req.Name = list[1]
			}
			if n == 3 {
				req.Path = list[2]
			}
			res, err := a.snapshot(req)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			return a.printSnapshots(op, res, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// snapshot asks the engine, and notes the call in the sandbox's history.
func (a *app) snapshot(req reconcile.SnapshotRequest) (*reconcile.SnapshotResult, error) {
	ws, err := a.workspace(nil)
	if err != nil {
		return nil, err
	}
	eng, err := a.engine("snapshot", engineFlags{})
	if err != nil {
		return nil, err
	}
	start := eng.Clock.Now()
	res, err := eng.Snapshot(a.context(), ws, req)
	if req.Op != reconcile.SnapshotList {
		if tgt, terr := eng.Target(ws, req.Sandbox); terr == nil {
			detail := "snapshot=" + req.Name
			if req.Path != "" {
				detail += " path=" + req.Path
			}
			a.note(tgt, sandbox.Event{Tool: "snapshot " + string(req.Op), Detail: detail}, start, err)
		}
	}
	return res, err
}

func (a *app) printSnapshots(op reconcile.SnapshotOp, res *reconcile.SnapshotResult, asJSON bool) error {
	if asJSON {
		out := map[string]any{"sandbox": res.Sandbox, "instance": res.Instance, "driver": res.Driver}
		if op == reconcile.SnapshotList {
			out["snapshots"] = nonNil(res.Snapshots)
		} else {
			out["snapshot"], out["action"] = res.Snapshot, string(op)
		}
		if res.Path != "" {
			out["path"] = res.Path
		}
		return writeJSON(a.stdout, out)
	}
	if op != reconcile.SnapshotList {
		past := map[reconcile.SnapshotOp]string{reconcile.SnapshotCreate: "taken",
			reconcile.SnapshotRestore: "restored", reconcile.SnapshotDelete: "deleted",
			reconcile.SnapshotExport: "exported to " + res.Path,
			reconcile.SnapshotImport: "imported from " + res.Path}[op]
		fmt.Fprintf(a.stdout, "Snapshot %s of sandbox %s %s.\n", termsafe.Line(res.Snapshot.Name), res.Sandbox,
			termsafe.Line(past))
		return nil
	}
	if len(res.Snapshots) == 0 {
		fmt.Fprintf(a.stdout, "Sandbox %s has no snapshots.\n", res.Sandbox)
		return nil
	}
	t := newTable(a.stdout, "SNAPSHOT", "CREATED", "SIZE")
	for _, s := range res.Snapshots {
		t.row(s.Name, createdAt(s), size(s.SizeBytes))
	}
	t.flush()
	return nil
}

func createdAt(s *state.Snapshot) string {
	if s.CreatedAt.IsZero() {
		return "-"
	}
	return s.CreatedAt.UTC().Format(time.RFC3339)
}

func size(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// cloneCommand is `sbf clone SRC [NEW]`.
func (a *app) cloneCommand() *cobra.Command {
	var f convergeFlags
	var ttl, snapshot string
	cmd := &cobra.Command{
		Use:   "clone SOURCE [NAME]",
		Short: "Make a new sandbox whose VM starts as a copy of another's disk",
		Long: "clone declares NAME (default SOURCE-clone-N) as an ad-hoc sandbox like SOURCE (its VM keys,\n" +
			"network, runtime, services and compose; not its host ports), leases it and creates its VM as a\n" +
			"copy of SOURCE's disk, or of one of SOURCE's snapshots (--snapshot). It counts against [lease]\n" +
			"max_instances like any sandbox. Lima copies only a stopped VM: a running SOURCE is stopped for\n" +
			"the copy and started again. Destroy the clone like any sandbox (sbf destroy NAME).",
		Args:              args(cobra.RangeArgs(1, 2)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			req := reconcile.CloneRequest{Source: list[0], Snapshot: snapshot}
			if len(list) == 2 {
				req.Name = list[1]
			}
			if ttl != "" {
				d, err := spec.ParseDuration(ttl)
				if err != nil {
					return usageErrorf("--ttl: %v", err)
				}
				req.TTL = reconcile.TTL(d.Std())
			}
			return a.clone(&f, req)
		},
	}
	f.register(cmd, 0)
	cmd.Flags().StringVar(&ttl, "ttl", "", "lease length (30m, 2h, 1d); default: SOURCE's lease length")
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "copy this snapshot of SOURCE instead of its disk as it is")
	cmd.RegisterFlagCompletionFunc("snapshot", func(_ *cobra.Command, list []string, _ string) ([]string,
		cobra.ShellCompDirective) {
		if len(list) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.snapshotNames(list[0]), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func (a *app) clone(f *convergeFlags, req reconcile.CloneRequest) error {
	ws, eng, err := a.workspaceEngine("clone", f)
	if err != nil {
		return err
	}
	req.Audit = &reconcile.Audit{Door: "cli", Tool: "clone"}
	res, name, err := eng.Clone(a.context(), ws, req)
	if f.asJSON {
		rep := map[string]any{"sandbox": name, "source": req.Source, "result": applyReportOf(res, err)}
		if werr := writeJSON(a.stdout, rep); werr != nil {
			return werr
		}
		if err != nil {
			return silentExit(1)
		}
		return nil
	}
	if res != nil && res.Plan != nil && res.Applied && err == nil {
		fmt.Fprintf(a.stdout, "Sandbox %s is a clone of %s.\n", name, req.Source)
		a.printOutcome("clone", res, []string{name}, eng.Clock.Now())
	}
	return err
}
