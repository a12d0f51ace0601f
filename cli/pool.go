package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) poolCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Warm pools: booted, idle VMs that a create adopts instead of booting one",
		Long: "A [pool.NAME] table asks for `size` booted, idle VMs (spares) of one shape: driver, cpus,\n" +
			"memory_gib, disk_gib, arch, image or template. A sandbox whose VM would be created adopts a\n" +
			"ready spare of the same driver and shape instead (the plan says `create (warm: sbf-pool-…)`).\n" +
			"The loop (sbf serve, sbf mcp, sbf reconcile --watch) keeps pools full; these commands do one\n" +
			"pass by hand. Spares count toward [lease] max_instances, and a create at the cap deletes one.\n" +
			"With memory_template = true a pool also keeps one memory template: a spare booted once, its\n" +
			"memory saved and the VM stopped. A create of its shape (without mounts) that finds no ready\n" +
			"spare starts from it without a boot (the plan says `from memory template sbf-pool-…`).",
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.poolFillCommand(), a.poolStatusCommand(), a.poolDrainCommand())
	return cmd
}

func (a *app) poolFillCommand() *cobra.Command {
	var f convergeFlags
	cmd := &cobra.Command{
		Use:   "fill",
		Short: "Make the spares the workspace's pools lack (and delete idle, stray or surplus ones); waits for them to boot",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return a.poolPass("pool fill", &f, poolPass{req: reconcile.FillPools{}})
		},
	}
	f.register(cmd, withParallelism|withSet)
	return cmd
}

func (a *app) poolStatusCommand() *cobra.Command {
	var f convergeFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each pool's spares (ready, booting, idle-expired …) and what a fill would do",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return a.poolPass("pool status", &f, poolPass{req: reconcile.FillPools{}, status: true})
		},
	}
	f.register(cmd, withSet)
	return cmd
}

func (a *app) poolDrainCommand() *cobra.Command {
	var f convergeFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Delete the spares of the workspace's pools (--all: every spare on this host); adopted VMs are never touched",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			p := poolPass{req: reconcile.DrainPools{All: all}}
			if !f.autoApprove {
				p.confirm = a.confirm(f.asJSON)
			}
			return a.poolPass("pool drain", &f, p)
		},
	}
	f.register(cmd, withApprove|withParallelism|withSet)
	cmd.Flags().BoolVar(&all, "all", false, "every spare the drivers list, whichever workspace's pool made it")
	return cmd
}

// poolReport is the --json output of the pool commands.
type poolReport struct {
	Plan    plan.Report           `json:"plan"`
	Applied bool                  `json:"applied"`
	Pools   reconcile.PoolsReport `json:"pools"`
	Error   *coded.Error          `json:"error"`
}

// poolPass is what a pool command asks: the pass (fill or drain), and
// whether only its plan is wanted (status).
type poolPass struct {
	req     reconcile.Intent
	status  bool
	confirm func(*plan.Plan) (bool, error)
}

func (a *app) poolPass(cmdName string, f *convergeFlags, p poolPass) error {
	ws, eng, err := a.workspaceEngine(cmdName, f)
	if err != nil {
		return err
	}
	opts := reconcile.Options{Intent: p.req, Confirm: p.confirm}
	run := eng.Apply
	if p.status {
		run = eng.Plan
	}
	res, err := run(a.context(), ws, opts)
	if res == nil {
		return a.reportError(err, f.asJSON)
	}
	if f.asJSON {
		rep := poolReport{
			Plan:    res.Plan.Report(),
			Applied: res.Applied,
			Pools:   res.PoolsReport(),
			Error:   coded.Of(err, coded.Unknown),
		}
		if werr := writeJSON(a.stdout, rep); werr != nil {
			return werr
		}
		if err != nil {
			return silentExit(1)
		}
		return nil
	}
	_, draining := p.req.(reconcile.DrainPools)
	switch {
	case p.status && !res.Plan.Empty():
		fmt.Fprintln(a.stdout, "A pool pass (sbf pool fill, or the loop) would:")
		res.Plan.Render(a.stdout, a.style())
	case p.confirm != nil && !res.Applied && len(res.Plan.Actions) > 0 && err == nil:
		fmt.Fprintln(a.stdout, "Drain cancelled; nothing was changed.")
		return silentExit(1)
	case res.Applied:
		s := res.Plan.Summary()
		fmt.Fprintf(a.stdout, "Pool pass complete: %d spares made, %d deleted.\n", s.Add, s.Destroy)
	case !p.status && len(res.Plan.Problems) == 0 && draining:
		fmt.Fprintln(a.stdout, "No changes. No spares to drain.")
	case !p.status && len(res.Plan.Problems) == 0:
		fmt.Fprintln(a.stdout, "No changes. Pools are full.")
	}
	res.Plan.RenderProblems(a.stdout)
	a.printPools(res.PoolsReport())
	return err
}

func (a *app) printPools(rep reconcile.PoolsReport) {
	if len(rep.Pools) == 0 && len(rep.Others) == 0 {
		fmt.Fprintln(a.stdout, "No pools declared and no spares on this host.")
		return
	}
	if len(rep.Pools) > 0 {
		fmt.Fprintln(a.stdout)
		t := newTable(a.stdout, "POOL", "DRIVER", "SHAPE", "SIZE", "READY", "BOOTING", "TEMPLATES", "MAX IDLE", "PROBLEM")
		for _, p := range rep.Pools {
			templates := "-"
			if p.MemoryTemplate {
				templates = fmt.Sprint(p.Templates)
			}
			t.row(p.Name, p.Driver, p.Shape, fmt.Sprint(p.Size), fmt.Sprint(p.Ready), fmt.Sprint(p.Booting), templates,
				p.MaxIdle.String(), firstLine(p.Problem))
		}
		t.flush()
	}
	var spares []reconcile.SpareStatus
	for _, p := range rep.Pools {
		spares = append(spares, p.Spares...)
	}
	spares = append(spares, rep.Others...)
	if len(spares) == 0 {
		return
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "SPARE", "DRIVER", "POOL", "STATE", "RUNTIME", "IDLE UNTIL")
	for _, s := range spares {
		until := "-"
		if s.IdleUntil != nil {
			until = s.IdleUntil.UTC().Format(time.RFC3339)
		}
		runtime := map[bool]string{true: "ready", false: "-"}[s.Runtime]
		t.row(s.Instance, s.Driver, orDash(s.Pool), s.State, runtime, until)
	}
	t.flush()
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
