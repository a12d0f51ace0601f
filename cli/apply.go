package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) applyCommand() *cobra.Command {
	var f convergeFlags
	var targets []string
	cmd := &cobra.Command{
		Use:   "apply [PLANFILE]",
		Short: "Converge the sandboxes to the desired state",
		Long: "apply acquires or renews the leases of the sandboxes it converges, plans, asks for\n" +
			"confirmation (unless --auto-approve or a saved PLANFILE), and carries the plan out.\n" +
			"A saved plan is refused when the state changed since it was made.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			opts := reconcile.Options{Targets: targets}
			if len(list) == 1 {
				saved, err := reconcile.ReadSavedPlan(list[0])
				if err != nil {
					return err
				}
				opts.Saved, opts.Targets, f.autoApprove = saved, saved.Targets, true
			}
			opts.Request = reconcile.Request{Op: reconcile.Renew, Sandboxes: opts.Targets}
			if f.autoApprove {
				opts.Confirm = a.showPlan(f.asJSON)
			}
			return a.converge("apply", &f, opts)
		},
	}
	f.register(cmd, withApprove|withParallelism|withSet)
	cmd.Flags().StringArrayVar(&targets, "target", nil, "converge only this sandbox (repeatable)")
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
