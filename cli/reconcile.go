package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) reconcileCommand() *cobra.Command {
	var f convergeFlags
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Expire and repair without renewing any lease (one pass, or --watch)",
		Long: "reconcile converges the workspace as it is: sandboxes whose lease ran out are expired (their\n" +
			"VMs deleted), drifted ones repaired. It never acquires or renews a lease. With --watch it loops,\n" +
			"waking at the next lease end or every --interval, until interrupted.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if !watch {
				f.autoApprove = true
				return a.converge("reconcile", &f, reconcile.Options{Confirm: a.showPlan(f.asJSON),
					Intent: reconcile.Reconcile{}})
			}
			return a.watch(&f, interval)
		},
	}
	f.register(cmd, withParallelism|withSet)
	cmd.Flags().BoolVar(&watch, "watch", false, "keep reconciling until interrupted")
	cmd.Flags().DurationVar(&interval, "interval", time.Minute, "longest sleep between passes")
	return cmd
}

func (a *app) watch(f *convergeFlags, interval time.Duration) error {
	if interval <= 0 {
		return usageErrorf("--interval must be positive")
	}
	ws, err := a.workspace(f.sets)
	if err != nil {
		return err
	}
	if f.lockTimeout == 0 {
		f.lockTimeout = interval // wait out a CLI apply rather than skip the pass
	}
	eng, err := a.engine("reconcile --watch", f.engineFlags)
	if err != nil {
		return err
	}
	if f.asJSON {
		eng.Events = nil // stdout is the stream; progress would only be noise
	}
	ctx, stop := signal.NotifyContext(a.context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(a.stderr, "sbf: reconciling %s every %s (and at each lease end); Ctrl-C stops\n", a.dir, interval)
	return eng.Watch(ctx, reconcile.WatchOptions{
		Workspaces: func() []spec.Options { return []spec.Options{ws} },
		Interval:   interval,
		PoolReport: func(_ spec.Options, res *reconcile.Result, err error) {
			if err != nil {
				fmt.Fprintf(a.stderr, "sbf: pool pass: %s\n", termsafe.Text(err.Error()))
			}
			if res != nil && res.Applied && !f.asJSON {
				s := res.Plan.Summary()
				fmt.Fprintf(a.stdout, "%s pool pass: %d spares made, %d deleted\n", eng.Clock.Now().UTC().Format(time.RFC3339),
					s.Add, s.Destroy)
			}
		},
		Report: func(_ spec.Options, res *reconcile.Result, err error) {
			if f.asJSON {
				// One object per line (NDJSON), so a reader can follow the stream.
				json.NewEncoder(a.stdout).Encode(watchReport{Time: eng.Clock.Now().UTC(), applyReport: applyReportOf(res, err)})
				return
			}
			if err != nil {
				fmt.Fprintf(a.stderr, "sbf: reconcile pass: %s\n", termsafe.Text(err.Error()))
			}
			if res != nil && res.Plan != nil && !res.Plan.Empty() && res.Applied {
				line := strings.TrimSuffix(outcomeLine(res), ".")
				line = strings.Replace(strings.Replace(line, "Apply complete:", "pass:", 1), "Apply failed:", "pass failed:", 1)
				fmt.Fprintf(a.stdout, "%s %s\n", eng.Clock.Now().UTC().Format(time.RFC3339), line)
			}
		},
	})
}

// watchReport is one line of `sbf reconcile --watch --json`.
type watchReport struct {
	Time time.Time `json:"time"`
	applyReport
}
