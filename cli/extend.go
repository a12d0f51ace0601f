package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) extendCommand() *cobra.Command {
	var f convergeFlags
	cmd := &cobra.Command{
		Use:               "extend NAME DURATION",
		Short:             "Move a sandbox's lease end later (within [lease] max_ttl and max_lifetime)",
		Args:              args(cobra.ExactArgs(2)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			d, err := spec.ParseDuration(list[1])
			if err != nil {
				return usageErrorf("DURATION %q: %v", list[1], err)
			}
			f.autoApprove = true
			return a.converge("extend", &f, reconcile.Options{
				Intent:  reconcile.Extend{Sandbox: list[0], By: d.Std(), ByAsGiven: list[1]},
				Confirm: a.showPlan(f.asJSON)})
		},
	}
	f.register(cmd, withSet)
	return cmd
}
