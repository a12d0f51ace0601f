package main

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) upCommand() *cobra.Command {
	var f convergeFlags
	var ttl string
	var bootstrap, services bool
	cmd := &cobra.Command{
		Use:   "up [NAME]...",
		Short: "Acquire leases for sandboxes (declaring unknown names) and converge them",
		Long: "up acquires or renews the lease of each named sandbox and converges it. A name no file\n" +
			"declares becomes an ad-hoc sandbox with the [vm] defaults, recorded in .sandboxforge/overrides.toml,\n" +
			"and gets SandboxForge v1's bootstrap: the container runtime, and the [infra] services (--services).\n" +
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
			var keys map[string]any
			if bootstrap {
				var err error
				if keys, err = a.bootstrapKeys(f.sets, services); err != nil {
					return err
				}
			}
			return a.converge("up", &f, reconcile.Options{
				Targets: names, Edit: reconcile.UpEdit(names, d.Std(), keys), Confirm: a.showPlan(f.asJSON), Rollback: true})
		},
	}
	f.register(cmd, withParallelism|withSet)
	cmd.Flags().StringVar(&ttl, "ttl", "", "lease length (30m, 2h, 1d); default: the sandbox's ttl or [lease] default_ttl")
	cmd.Flags().BoolVar(&bootstrap, "bootstrap", true, "give new ad-hoc sandboxes the container runtime (and services)")
	cmd.Flags().BoolVar(&services, "services", true, "with --bootstrap, also the [infra] services (when include_services_by_default allows)")
	return cmd
}

// bootstrapKeys are the layers `sbf up` declares new ad-hoc sandboxes with,
// decided by the engine for the backend [vm] selects.
func (a *app) bootstrapKeys(sets []string, services bool) (map[string]any, error) {
	ws, err := a.workspace(sets)
	if err != nil {
		return nil, err
	}
	r, err := spec.Load(ws)
	if err != nil {
		return nil, err
	}
	eng, err := a.engine("up", engineFlags{})
	if err != nil {
		return nil, err
	}
	drv, err := eng.Drivers(r.Host.ResolveDriver(r.Config.VM.Driver), r)
	if err != nil {
		return nil, err
	}
	return reconcile.BootstrapKeys(r, drv, services), nil
}
