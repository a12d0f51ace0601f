package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// convergeFlags are shared by the commands that change the world.
type convergeFlags struct {
	engineFlags
	asJSON      bool
	autoApprove bool
	sets        []string
}

// Flags beyond --json and --lock-timeout, given only to the commands on
// which they act.
const (
	withApprove     = 1 << iota // asks before changing anything
	withParallelism             // executes a plan over several sandboxes
	withSet                     // reads the desired state, so overrides matter
)

func (f *convergeFlags) register(cmd *cobra.Command, which int) {
	f.parallelism = 4
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	cmd.Flags().DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait this long for another sbf holding the state lock")
	if which&withParallelism != 0 {
		cmd.Flags().IntVar(&f.parallelism, "parallelism", 4, "sandboxes converged at once")
	}
	if which&withSet != 0 {
		cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a key for this run (`key.path=value`, repeatable)")
	}
	if which&withApprove != 0 {
		cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "do not ask for confirmation")
	}
}

func (a *app) workspace(sets []string) (spec.Options, error) {
	req, err := spec.ParseSet(sets)
	if err != nil {
		return spec.Options{}, &exitError{code: 2, err: err}
	}
	return spec.Options{Root: a.dir, Host: spec.CurrentHost(), ConfigHome: a.configHome(), Request: req}, nil
}

// workspaceEngine is the workspace and engine of a command that changes
// the world; with --json its progress is not printed (stdout is the JSON).
func (a *app) workspaceEngine(cmdName string, f *convergeFlags) (spec.Options, *reconcile.Engine, error) {
	ws, err := a.workspace(f.sets)
	if err != nil {
		return ws, nil, err
	}
	eng, err := a.engine(cmdName, f.engineFlags)
	if err != nil {
		return ws, nil, err
	}
	if f.asJSON {
		eng.Events = nil
	}
	return ws, eng, nil
}

// converge runs the engine and reports the outcome the same way for apply,
// up, destroy and extend.
func (a *app) converge(cmdName string, f *convergeFlags, opts reconcile.Options) error {
	ws, eng, err := a.workspaceEngine(cmdName, f)
	if err != nil {
		return err
	}
	if opts.Confirm == nil {
		// One question for apply, up and destroy: asked on a terminal, refused
		// without one; --auto-approve shows the plan and goes ahead.
		opts.Confirm = a.confirm(f.asJSON)
		if f.autoApprove {
			opts.Confirm = a.showPlan(f.asJSON)
		}
	}
	if a.interrupts != nil {
		defer a.interrupts.applyingPlan()()
	}
	opts.Audit = &reconcile.Audit{Door: "cli", Tool: cmdName} // the engine records it in the history
	res, err := eng.Apply(a.context(), ws, opts)
	if f.asJSON {
		if werr := writeJSON(a.stdout, applyReportOf(res, err)); werr != nil {
			return werr
		}
		if err != nil {
			return silentExit(1)
		}
		return nil
	}
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintf(a.stderr, "sbf: warning: %s\n", termsafe.Text(w))
		}
	}
	var unavailable *drivers.UnavailableError
	if res == nil && errors.As(err, &unavailable) {
		fmt.Fprintln(
			a.stdout,
			"Nothing was changed: a backend this workspace needs cannot be used here (the reason follows).",
		)
		return err
	}
	if res != nil && res.Plan != nil && !res.Applied && err == nil {
		// Declined: like Terraform, not a success a script could miss.
		fmt.Fprintln(a.stdout, "Apply cancelled; nothing was changed.")
		return silentExit(1)
	}
	if res != nil && res.Plan != nil && res.Applied {
		a.printOutcome(cmdName, res, opts.Targets, eng.Clock.Now())
	}
	return err
}

// confirm asks on a terminal; without one it refuses rather than guess.
func (a *app) confirm(asJSON bool) func(*plan.Plan) (bool, error) {
	return func(p *plan.Plan) (bool, error) {
		if !isTerminal(a.stdin) {
			// cron, nohup and CI runners give /dev/null or a pipe: nobody
			// can answer, and a silent no-op must not look like success.
			if !asJSON {
				p.Render(a.stdout, a.style())
			}
			return false, errors.New("refusing to change sandboxes without confirmation: stdin is not a terminal " +
				"(cron, CI, a pipe); review the plan with 'sbf plan', then run again with --auto-approve")
		}
		if !asJSON {
			p.Render(a.stdout, a.style())
		}
		fmt.Fprint(a.stdout, "\nDo you want to perform these actions? Only 'yes' is accepted: ")
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, os.ErrClosed) && line == "" {
			return false, nil
		}
		return strings.TrimSpace(line) == "yes", nil
	}
}

func (a *app) style() plan.Style {
	return plan.Style{Color: isTerminal(a.stdout) && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"}
}

// isTerminal asks the terminal driver, not the file mode: /dev/null is a
// character device too.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printStatusTable is kubectl get's table: AGE and the lease's end
// relative to now ("in 1h58m"); wide (-o wide) gives both as times too.
func (a *app) printStatusTable(rows []reconcile.SandboxStatus, now time.Time, wide bool) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(a.stdout)
	headers := []string{"SANDBOX", "INSTANCE", "DRIVER", "PHASE", "LIVE", "AGE", "EXPIRES", "NOTE"}
	if wide {
		headers = []string{"SANDBOX", "INSTANCE", "DRIVER", "PHASE", "LIVE", "AGE", "CREATED", "EXPIRES",
			"EXPIRES AT", "NOTE"}
	}
	t := newTable(a.stdout, headers...)
	for _, r := range rows {
		age, created := "-", "-"
		if r.CreatedAt != nil {
			age, created = humanDuration(now.Sub(*r.CreatedAt)), r.CreatedAt.UTC().Format(time.RFC3339)
		}
		exp, expAt := "-", "-"
		if r.ExpiresAt != nil {
			exp, expAt = relativeTime(*r.ExpiresAt, now), r.ExpiresAt.UTC().Format(time.RFC3339)
			if r.Lease == reconcile.LeaseEnded && r.ExpiresAt.After(now) {
				exp = "-" // dropped before its end (destroy): none to come; -o wide keeps the recorded one
			}
		}
		note := r.Drift
		if r.LastError != "" {
			note = strings.TrimSpace(note + " " + firstLine(r.LastError))
		}
		phase := string(r.Phase)
		if r.Lease == reconcile.LeaseExpired {
			phase = "expired" // the engine's verdict: run out, the loop deletes the VM
		}
		if wide {
			t.row(r.Name, r.Instance, r.Driver, phase, r.Live, age, created, exp, expAt, note)
		} else {
			t.row(r.Name, r.Instance, r.Driver, phase, r.Live, age, exp, note)
		}
	}
	t.flush()
}

// relativeTime is a moment as "in 1h58m" or "3m ago".
func relativeTime(at, now time.Time) string {
	if d := at.Sub(now); d >= 0 {
		return "in " + humanDuration(d)
	}
	return humanDuration(now.Sub(at)) + " ago"
}

// humanDuration writes d as kubectl's AGE column does, precise when short
// and coarser as it grows (90s, 5m30s, 45m, 3d4h, 45d), except that hours
// keep their minutes below 8h (1h58m, where kubectl says 118m): a lease's
// end reads as people say it.
func humanDuration(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	m, h := s/60, s/3600
	switch {
	case s < 0:
		return "0s"
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case m < 10:
		return trimZero(fmt.Sprintf("%dm%ds", m, s%60))
	case m < 60:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		return trimZero(fmt.Sprintf("%dh%dm", h, m%60))
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 24*8:
		return trimZero(fmt.Sprintf("%dd%dh", h/24, h%24))
	case h < 24*365*2:
		return fmt.Sprintf("%dd", h/24)
	}
	return fmt.Sprintf("%dy%dd", h/24/365, h/24%365)
}

// trimZero drops a zero second part: 5m0s → 5m, 2h0m → 2h, 3d0h → 3d.
func trimZero(s string) string {
	for _, z := range []string{"0s", "0m", "0h"} {
		if strings.HasSuffix(s, z) && len(s) > len(z) && s[len(s)-len(z)-1] >= 'a' {
			return strings.TrimSuffix(s, z)
		}
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// shortDuration writes a lease length as people do: 1h30m, 45m, 2h.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}
