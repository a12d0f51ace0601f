package main

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) upCommand() *cobra.Command {
	var f convergeFlags
	var ttl string
	cmd := &cobra.Command{
		Use:   "up [NAME]...",
		Short: "Acquire leases for sandboxes (declaring unknown names) and converge them",
		Long: "up acquires or renews the lease of each named sandbox and converges it. A name no file\n" +
			"declares becomes an ad-hoc sandbox with the [vm] defaults, recorded in .sandboxforge/overrides.toml.\n" +
			"Without names, every sandbox the files declare is brought up.",
		RunE: func(_ *cobra.Command, names []string) error {
			var d spec.Duration
			if ttl != "" {
				var err error
				if d, err = spec.ParseDuration(ttl); err != nil {
					return usageErrorf("--ttl: %v", err)
				}
			}
			f.autoApprove = true
			return a.converge("up", &f, reconcile.Options{
				Targets: names, Edit: reconcile.UpEdit(names, d.Std(), nil), Confirm: a.showPlan(f.asJSON), Rollback: true})
		},
	}
	f.register(cmd, withParallelism|withSet)
	cmd.Flags().StringVar(&ttl, "ttl", "", "lease length (30m, 2h, 1d); default: the sandbox's ttl or [lease] default_ttl")
	return cmd
}
