package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) statusCommand() *cobra.Command {
	var f convergeFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each sandbox: phase, lease, what the driver reports, drift",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			ws, err := a.workspace(f.sets)
			if err != nil {
				return err
			}
			eng, err := a.engine("status", f.engineFlags)
			if err != nil {
				return err
			}
			res, err := eng.Plan(context.Background(), ws, reconcile.Options{})
			if res == nil {
				return a.reportError(err, f.asJSON)
			}
			rows := res.Status()
			if f.asJSON {
				return writeJSON(a.stdout, map[string]any{
					"workspace_root": res.Resolved.Root, "workspace_id": res.Resolved.WorkspaceID,
					"sandboxes": nonNil(rows), "in_progress": res.Busy, "error": coded.Of(err, coded.Unknown)})
			}
			fmt.Fprintf(a.stdout, "Workspace %s (%s)\n", res.Resolved.Root, res.Resolved.WorkspaceID)
			a.noteBusy(res)
			if len(rows) == 0 {
				fmt.Fprintln(a.stdout, "No sandboxes declared or recorded.")
			}
			a.printStatusTable(rows)
			if err != nil {
				fmt.Fprintf(a.stderr, "sbf: %v\n", err)
			}
			return nil
		},
	}
	f.register(cmd, withSet)
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// noteBusy says that another sbf is changing the workspace, so what follows
// may be halfway between two steps.
func (a *app) noteBusy(res *reconcile.Result) {
	if b := res.Busy; b != nil {
		fmt.Fprintf(a.stdout, "Note: %q (pid %d) has been changing this workspace since %s; this is a glimpse mid-change "+
			"(--lock-timeout 5m waits for it to finish).\n", b.Command, b.PID, b.Since.UTC().Format(time.RFC3339))
	}
}
