package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) planCommand() *cobra.Command {
	var f convergeFlags
	var detailed, noRenew bool
	var out string
	var targets []string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what 'sbf apply' would change",
		Long: "plan compares the desired state (with the leases apply would acquire or renew) against the\n" +
			"state file and what the drivers report, and prints the actions that would converge them and\n" +
			"the lease renewals apply would record. With --detailed-exitcode: 0 no changes, 1 error,\n" +
			"2 changes pending; lease renewals alone are no change (every apply renews), and --no-renew\n" +
			"plans without them (what 'sbf reconcile' would do).",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			ws, err := a.workspace(f.sets)
			if err != nil {
				return err
			}
			eng, err := a.engine("plan", f.engineFlags)
			if err != nil {
				return err
			}
			res, err := eng.Plan(a.context(), ws, reconcile.Options{
				Intent: leaseIntent(noRenew, targets)})
			if res == nil {
				return a.reportError(err, f.asJSON)
			}
			if out != "" {
				if serr := res.Save(out, targets, eng.Clock.Now()); serr != nil {
					return serr
				}
			}
			if f.asJSON {
				rep := res.Plan.Report()
				rep.InProgress = res.Busy
				if werr := writeJSON(a.stdout, rep); werr != nil {
					return werr
				}
			} else {
				a.noteBusy(res)
				res.Plan.Render(a.stdout, a.style())
				res.Plan.RenderProblems(a.stderr)
				for _, w := range res.Warnings {
					fmt.Fprintf(a.stderr, "sbf: warning: %s\n", termsafe.Text(w))
				}
			}
			switch {
			case err != nil:
				return silentExit(1)
			case detailed && len(res.Plan.Actions) > 0:
				return silentExit(2)
			}
			return nil
		},
	}
	f.register(cmd, withSet)
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when changes are pending (0 none, 1 error)")
	cmd.Flags().BoolVar(&noRenew, "no-renew", false, "plan without renewing or acquiring leases (drift only)")
	cmd.Flags().StringVar(&out, "out", "", "save the plan to `FILE` for 'sbf apply FILE'")
	cmd.Flags().StringArrayVar(&targets, "target", nil, "plan only this sandbox (repeatable)")
	a.completeTarget(cmd)
	return cmd
}

// reportError prints a failure that left nothing else to show; with
// --json it becomes {"error": {...}} on stdout.
func (a *app) reportError(err error, asJSON bool) error {
	if err == nil || !asJSON {
		return err
	}
	if werr := writeJSON(a.stdout, map[string]any{"error": coded.Of(err, coded.Unknown)}); werr != nil {
		return werr
	}
	return silentExit(1)
}

// leaseIntent is the intent of plan and apply: renew the leases they keep,
// or (--no-renew) leave every lease as it is.
func leaseIntent(noRenew bool, targets []string) reconcile.Intent {
	if noRenew {
		return reconcile.Keep{Sandboxes: targets, All: len(targets) == 0}
	}
	return reconcile.Renew{Sandboxes: targets, All: len(targets) == 0}
}
