package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) statusCommand() *cobra.Command {
	var f convergeFlags
	var all, allOwners bool
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each sandbox: phase, lease, what the driver reports, drift",
		Long: "status lists the workspace's sandboxes that are not over: declared, running, stopped, failed, or\n" +
			"recorded ended while their VM still exists. --all also lists those destroyed or expired. AGE and\n" +
			"EXPIRES are relative to now, as kubectl get shows them; -o wide adds them as times, --json has\n" +
			"the times (created_at, expires_at). --all-owners also lists every instance on the workspace's\n" +
			"shared backends (a team's cluster namespace) with who holds it until when, whoever's.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if output != "" && output != "wide" {
				return usageErrorf("-o %s: the one output format is wide (--json gives JSON)", output)
			}
			ws, err := a.workspace(f.sets)
			if err != nil {
				return err
			}
			eng, err := a.engine("status", f.engineFlags)
			if err != nil {
				return err
			}
			// The archive's ended sandboxes are listed (--all) or counted.
			res, err := eng.Plan(a.context(), ws, reconcile.Options{Intent: reconcile.Reconcile{}, Ended: true})
			if res == nil {
				return a.reportError(err, f.asJSON)
			}
			rows, ended := liveRows(res.Status(), all)
			if f.asJSON {
				out := map[string]any{
					"workspace_root": res.Resolved.Root, "workspace_id": res.Resolved.WorkspaceID,
					"sandboxes": nonNil(rows), "ended_not_shown": ended, "in_progress": res.Busy,
					"error": coded.Of(err, coded.Unknown)}
				if allOwners {
					out["holdings"] = res.Holdings()
				}
				return writeJSON(a.stdout, out)
			}
			fmt.Fprintf(a.stdout, "Workspace %s (%s)\n", res.Resolved.Root, res.Resolved.WorkspaceID)
			a.noteBusy(res)
			if len(rows) == 0 && ended == 0 {
				fmt.Fprintln(a.stdout, "No sandboxes declared or recorded.")
			}
			a.printStatusTable(rows, res.Now, output == "wide")
			if ended > 0 {
				what := "1 sandbox destroyed or expired is"
				if ended > 1 {
					what = fmt.Sprintf("%d sandboxes destroyed or expired are", ended)
				}
				fmt.Fprintf(a.stdout, "\n%s not shown (sbf status --all lists them).\n", what)
			}
			if allOwners {
				a.printHoldings(res.Holdings(), res.Now)
			}
			if err != nil {
				printErrors(a.stderr, err)
			}
			return nil
		},
	}
	f.register(cmd, withSet)
	cmd.Flags().BoolVar(&all, "all", false, "also list sandboxes destroyed or expired")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide: also the creation and expiry times")
	cmd.Flags().BoolVar(&allOwners, "all-owners", false,
		"also list who holds each instance on the workspace's shared backends, until when")
	return cmd
}

// printHoldings lists who holds what on shared backends, as every teammate sees it.
func (a *app) printHoldings(rows []reconcile.Holding, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, "\nNo instances on a shared backend (only a team's cluster namespace names holders).")
		return
	}
	fmt.Fprintf(a.stdout, "\nHeld on shared backends (%d):\n", len(rows))
	t := newTable(a.stdout, "HOLDER", "INSTANCE", "DRIVER", "SANDBOX", "STATUS", "EXPIRES")
	for _, h := range rows {
		sandbox, exp := h.Sandbox, "-"
		switch {
		case h.Template:
			sandbox = "(memory template)"
		case h.Idle:
			sandbox = "(spare, idle: to be replaced)"
		case h.Spare:
			sandbox = "(spare)"
		case h.Mine:
			sandbox += " (this workspace)"
		case sandbox == "":
			sandbox = "-"
		}
		if h.LeaseEnd != nil {
			exp = relativeTime(*h.LeaseEnd, now)
		}
		t.row(h.Holder, h.Instance, h.Driver, sandbox, string(h.Status), exp)
	}
	t.flush()
}

// liveRows keeps the rows of sandboxes that are not over (all: every row)
// and counts the others.
func liveRows(rows []reconcile.SandboxStatus, all bool) (kept []reconcile.SandboxStatus, ended int) {
	if all {
		return rows, 0
	}
	kept = rows[:0] // in place: the rows are each caller's own
	for _, r := range rows {
		if r.Ended() {
			ended++
			continue
		}
		kept = append(kept, r)
	}
	return kept, ended
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
