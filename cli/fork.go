package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// forkCommand is `sbf fork SOURCE [--count N] [--name-prefix P]`.
func (a *app) forkCommand() *cobra.Command {
	var f convergeFlags
	var ttl, prefix string
	var count int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "fork SOURCE",
		Short: "Copy a running sandbox, memory and all, into new running sandboxes",
		Long: "fork pauses SOURCE while its state is saved once, lets it run on, and starts --count new ad-hoc\n" +
			"sandboxes (PREFIX-1, PREFIX-2 …; default SOURCE-fork-N) from that state, without a boot: each has its\n" +
			"own copy-on-write disk, its own hostname and machine id, fresh randomness, and SOURCE's VM keys,\n" +
			"network policy and mounts (not its host ports). Each holds a lease of its own (default SOURCE's\n" +
			"length, within lease.max_ttl) and counts against [lease] max_instances: a fork the cap cannot hold\n" +
			"whole makes none. A failed fork removes what it made; Ctrl-C keeps the children already running;\n" +
			"--dry-run shows the children a fork would make, or why it would be refused, and makes nothing.\n" +
			"Drivers that cannot fork (vz, hyperv, kubevirt) answer FORK_UNSUPPORTED with the\n" +
			"next step: a clone from a disk snapshot (sbf snapshot create, sbf clone --snapshot).",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			req := reconcile.ForkRequest{Source: list[0], Count: count, NamePrefix: prefix, DryRun: dryRun}
			if ttl != "" {
				d, err := spec.ParseDuration(ttl)
				if err != nil {
					return usageErrorf("--ttl: %v", err)
				}
				req.TTL = reconcile.TTL(d.Std())
			}
			return a.fork(&f, req)
		},
	}
	f.register(cmd, 0)
	cmd.Flags().IntVar(&count, "count", 1, fmt.Sprintf("how many children (1 to %d)", reconcile.MaxForkChildren))
	cmd.Flags().StringVar(&prefix, "name-prefix", "", "name the children PREFIX-1, PREFIX-2 … (default SOURCE-fork)")
	cmd.Flags().StringVar(&ttl, "ttl", "", "each child's lease length (30m, 2h, 1d); default: SOURCE's lease length")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the children a fork would make, or why it would be refused; "+
		"make nothing")
	return cmd
}

func (a *app) fork(f *convergeFlags, req reconcile.ForkRequest) error {
	ws, eng, err := a.workspaceEngine("fork", f)
	if err != nil {
		return err
	}
	req.Audit = &reconcile.Audit{Door: "cli", Tool: "fork"}
	res, err := eng.Fork(a.context(), ws, req)
	children := []reconcile.ForkedChild{}
	if res != nil && res.Children != nil {
		children = res.Children
	}
	if f.asJSON {
		rep := map[string]any{"source": req.Source, "children": children, "dry_run": req.DryRun}
		if res != nil {
			rep["paused_ms"] = res.Paused.Milliseconds()
		}
		if err != nil {
			rep["error"] = coded.Of(err, coded.Unknown)
		}
		if werr := writeJSON(a.stdout, rep); werr != nil {
			return werr
		}
		if err != nil {
			return silentExit(1)
		}
		return nil
	}
	names := make([]string, len(children))
	for i, c := range children {
		names[i] = c.Sandbox
	}
	switch {
	case len(children) == 0:
		return err
	case req.DryRun:
		fmt.Fprintf(a.stdout, "A fork of %s would make %s (nothing was made):\n", req.Source, strings.Join(names, ", "))
	default:
		fmt.Fprintf(a.stdout, "Forked %s into %s (the source paused %s).\n", req.Source, strings.Join(names, ", "),
			res.Paused.Round(time.Millisecond))
	}
	for _, c := range children {
		fmt.Fprintf(a.stdout, "  %s  %s  lease ends %s\n", c.Sandbox, c.Instance, c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return err
}
