package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/sandbox"
)

// statsRow is one sandbox's stats as sbf stats shows them.
type statsRow struct {
	Sandbox     string         `json:"sandbox"`
	Stats       sandbox.Stats  `json:"stats"`
	LeaseLeft   int64          `json:"lease_seconds_left"`
	LastCommand *sandbox.Event `json:"last_command"`
	Error       string         `json:"error,omitempty"`
}

func (a *app) statsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats [NAME]",
		Short: "Show CPU, load, memory, disk, uptime, lease left and last command of running sandboxes",
		Long: "stats samples each sandbox that holds a lease (or NAME) from its /proc and df: CPU use over a fifth\n" +
			"of a second, load, memory, the root filesystem, uptime; with its lease left and the last command\n" +
			"its history holds. On the sim driver these are this host's figures.",
		Args:              args(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			rows, err := a.sampleStats(list)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"sandboxes": nonNil(rows)})
			}
			a.printStats(rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stats as JSON")
	return cmd
}

// sampleStats samples the named sandbox, or each one holding a lease.
func (a *app) sampleStats(names []string) ([]statsRow, error) {
	ws, err := a.workspace(nil)
	if err != nil {
		return nil, err
	}
	eng, err := a.engine("stats", engineFlags{})
	if err != nil {
		return nil, err
	}
	r, err := eng.Load(ws)
	if err != nil {
		return nil, err
	}
	all := len(names) == 0
	if all {
		for name := range r.Config.Leases {
			names = append(names, name)
		}
		slices.Sort(names)
	}
	var rows []statsRow
	for _, name := range names {
		tgt, err := eng.Target(ws, name)
		if err != nil {
			if all {
				continue // a lease that ran out: nothing to sample
			}
			return nil, err
		}
		row := statsRow{Sandbox: name, LastCommand: tgt.LastCommand()}
		if l := tgt.LeaseLeft(eng.Clock.Now()); l != nil {
			row.LeaseLeft = l.SecondsLeft
		}
		if row.Stats, err = tgt.Stats(a.context()); err != nil {
			row.Error = err.Error()
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (a *app) printStats(rows []statsRow) {
	t := newTable(a.stdout, "SANDBOX", "CPU", "LOAD", "MEMORY", "DISK", "UPTIME", "LEASE", "LAST COMMAND")
	for _, r := range rows {
		s := r.Stats
		last := "-"
		if r.LastCommand != nil {
			last = strings.ReplaceAll(r.LastCommand.Command, "\n", `\n`)
		}
		load := "-"
		if len(s.Load) == 3 {
			load = fmt.Sprintf("%.2f %.2f %.2f", s.Load[0], s.Load[1], s.Load[2])
		}
		if r.Error != "" {
			t.row(r.Sandbox, "error: "+r.Error, "", "", "", "", "", "")
			continue
		}
		t.row(r.Sandbox, fmt.Sprintf("%.1f%% of %d", s.CPUPercent, s.CPUs), load,
			fmt.Sprintf("%s / %s", bytesText(s.MemoryUsed), bytesText(s.MemoryTotal)),
			fmt.Sprintf("%s / %s", bytesText(s.DiskUsed), bytesText(s.DiskTotal)),
			(time.Duration(s.UptimeSeconds) * time.Second).String(),
			(time.Duration(r.LeaseLeft) * time.Second).String(), last)
	}
	t.flush()
}

// bytesText renders a size in binary units, one decimal.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for ; v >= unit && i < 4; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

func (a *app) healthCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that every sandbox holding a lease runs and answers a command (exit 1 when one does not)",
		Args:  args(cobra.NoArgs),
		RunE: func(_ *cobra.Command, _ []string) error {
			ws, err := a.workspace(nil)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			eng, err := a.engine("health", engineFlags{})
			if err != nil {
				return a.reportError(err, asJSON)
			}
			rows, healthy, err := eng.Health(a.context(), ws)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			if asJSON {
				err = writeJSON(a.stdout, map[string]any{"healthy": healthy, "sandboxes": nonNil(rows)})
			} else {
				t := newTable(a.stdout, "SANDBOX", "STATUS", "LIVE", "LEASE", "EXEC", "ERROR")
				for _, r := range rows {
					t.row(r.Name, r.Status, r.Live, (time.Duration(r.LeaseLeft) * time.Second).String(),
						fmt.Sprintf("%dms", r.ExecMS), strings.ReplaceAll(r.Error, "\n", " "))
				}
				t.flush()
			}
			if err == nil && !healthy {
				return silentExit(1)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the check as JSON")
	return cmd
}
