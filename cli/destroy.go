package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) destroyCommand() *cobra.Command {
	var f convergeFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "destroy [NAME]...",
		Short: "Release sandboxes' leases and delete their VMs",
		Long: "destroy drops the lease of each named sandbox (every sandbox without names) and converges:\n" +
			"their VMs are stopped cleanly and deleted. --force deletes them at once, without the clean stop\n" +
			"(as docker rm -f); a VM still booting is always deleted at once. A later 'sbf apply' or 'sbf up'\n" +
			"brings declared sandboxes back.",
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(_ *cobra.Command, names []string) error {
			opts := reconcile.Options{Intent: reconcile.Destroy{Sandboxes: names,
				All: len(names) == 0, Force: force}}
			if f.autoApprove {
				opts.Confirm = a.showPlan(f.asJSON)
			}
			return a.converge("destroy", &f, opts)
		},
	}
	f.register(cmd, withApprove|withParallelism)
	cmd.Flags().BoolVarP(&force, "force", "f", false, "delete the VMs at once, without a clean stop")
	return cmd
}
