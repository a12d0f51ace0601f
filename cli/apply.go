package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) applyCommand() *cobra.Command {
	var f convergeFlags
	var targets []string
	var noRenew bool
	cmd := &cobra.Command{
		Use:   "apply [PLANFILE]",
		Short: "Converge the sandboxes to the desired state",
		Long: "apply acquires or renews the leases of the sandboxes it converges (a line says so for each;\n" +
			"--no-renew leaves leases as they are), plans, asks for confirmation (unless --auto-approve or\n" +
			"a saved PLANFILE), and carries the plan out. A saved plan is refused when the state changed\n" +
			"since it was made. A failed change is never counted as done: the summary says what failed\n" +
			"and the exit status is 1.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			var opts reconcile.Options
			if len(list) == 1 {
				saved, err := reconcile.ReadSavedPlan(list[0])
				if err != nil {
					return err
				}
				opts.Saved, targets, f.autoApprove = saved, saved.Targets, true
			}
			opts.Intent = leaseIntent(noRenew, targets)
			return a.converge("apply", &f, opts)
		},
	}
	f.register(cmd, withApprove|withParallelism|withSet)
	cmd.Flags().StringArrayVar(&targets, "target", nil, "converge only this sandbox (repeatable)")
	cmd.Flags().BoolVar(&noRenew, "no-renew", false, "converge without renewing or acquiring leases (drift only)")
	a.completeTarget(cmd)
	return cmd
}

// showPlan prints the plan before an approved run and goes ahead.
func (a *app) showPlan(asJSON bool) func(*plan.Plan) (bool, error) {
	return func(p *plan.Plan) (bool, error) {
		if !asJSON {
			p.Render(a.stdout, a.style())
			a.stdout.Write([]byte("\n"))
		}
		return true, nil
	}
}
