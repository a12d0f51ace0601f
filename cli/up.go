package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) upCommand() *cobra.Command {
	var f convergeFlags
	var ttl string
	var bootstrap, services, isNew bool
	cmd := &cobra.Command{
		Use:   "up [NAME]...",
		Short: "Acquire leases for sandboxes (declaring unknown names) and converge them",
		Long: "up acquires or renews the lease of each named sandbox and converges it. A name no file\n" +
			"declares becomes an ad-hoc sandbox with the [vm] defaults, recorded in .sandboxforge/overrides.toml,\n" +
			"and gets SandboxForge v1's bootstrap: the container runtime, and the [infra] services (--services).\n" +
			"Without names, every sandbox the files declare is brought up. Like apply, up shows its plan and\n" +
			"asks before changing anything (a lease renewal alone is no change); without a terminal it\n" +
			"refuses unless --auto-approve. A name no file declares and no earlier up made is likely a typo:\n" +
			"up names the closest declared sandboxes first, and without a terminal it needs --new (or\n" +
			"--auto-approve) to make it.",
		Example: "  sbf up                         # every declared sandbox\n" +
			"  sbf up api --ttl 2h            # a declared sandbox, with a 2-hour lease\n" +
			"  sbf up scratch --new --ttl 20m # a new ad-hoc sandbox\n" +
			"  sbf up api --auto-approve      # in a script: no question",
		RunE: func(_ *cobra.Command, names []string) error {
			if err := a.confirmNewNames(names, isNew || f.autoApprove); err != nil {
				return err
			}
			req := reconcile.Up{Sandboxes: names, All: len(names) == 0}
			if ttl != "" {
				d, err := spec.ParseDuration(ttl)
				if err != nil {
					return usageErrorf("--ttl: %v", err)
				}
				req.TTL, req.TTLAsGiven = reconcile.TTL(d.Std()), ttl
			}
			if bootstrap {
				req.Bootstrap = &reconcile.Bootstrap{Services: services}
			}
			// Confirm is left to converge: apply's question, and its refusal without a terminal.
			return a.converge("up", &f, reconcile.Options{Intent: req})
		},
	}
	f.register(cmd, withApprove|withParallelism|withSet)
	cmd.Flags().BoolVar(&isNew, "new", false, "make the names no file declares ad-hoc sandboxes (the plan still asks)")
	cmd.Flags().StringVar(&ttl, "ttl", "", "lease length (30m, 2h, 1d); default: the sandbox's ttl or [lease] default_ttl")
	cmd.Flags().BoolVar(&bootstrap, "bootstrap", true, "give new ad-hoc sandboxes the container runtime (and services)")
	cmd.Flags().
		BoolVar(&services, "services", true, "with --bootstrap, also the [infra] services (when "+
			"include_services_by_default allows)")
	return cmd
}
