package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/shellquote"
	"github.com/sandboxforge/sbf/sandbox"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/broker"
	"github.com/sandboxforge/sbf/spec"
)

// execFlags are sbf exec's options.
type execFlags struct {
	asJSON, interactive, tty bool
	timeout                  time.Duration
	maxOutput                int
}

func (a *app) execCommand() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec [NAME] [-i] [-t] -- COMMAND [ARG]...",
		Short: "Run a command in a sandbox (over a persistent SSH connection)",
		Long: "exec runs COMMAND in the sandbox NAME (optional when the workspace declares one sandbox),\n" +
			"streaming its output unchanged (escape sequences included, as ssh does) and exiting with its\n" +
			"exit status. -i passes stdin; -t runs it on a terminal (as ssh -t; stdin included). Ctrl-C\n" +
			"and other signals are passed on to the command; a third Ctrl-C gives up on it and ends it.\n" +
			"sbf's own failures exit 125, a --timeout 124, so they are never mistaken for the command's.\n" +
			"With --json it prints\n" +
			"{exit_code, stdout, stderr, duration_ms, ...} instead, and exits with the same status.",
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(cmd *cobra.Command, list []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 || dash >= len(list) {
				return usageErrorf("put the command after --, as in: sbf exec NAME -- uname -a")
			}
			names, command := list[:dash], list[dash:]
			if f.tty && f.asJSON {
				return usageErrorf("-t and --json do not go together: a terminal has no separate stdout and stderr")
			}
			if !f.tty {
				return a.execStreaming(names, shellJoin(command), f)
			}
			tgt, err := a.target(names)
			if err != nil {
				return a.cannotRun(err, f.asJSON)
			}
			return a.runOnTerminal(tgt, shellJoin(command))
		},
	}
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&f.interactive, "interactive", "i", false, "pass stdin to the command")
	cmd.Flags().BoolVarP(&f.tty, "tty", "t", false, "run the command on a terminal (stdin included)")
	cmd.Flags().BoolP("no-stdin", "n", false, "give the command no stdin (the default now; kept for old scripts)")
	cmd.Flags().MarkHidden("no-stdin")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "kill the command after this long and exit 124 (0: no limit)")
	cmd.Flags().IntVar(&f.maxOutput, "max-output", drivers.DefaultMaxOutput, "bytes of each output stream --json keeps")
	return a.cannotRunExits125(cmd)
}

// execStreaming runs a command in the sandbox names name with its output
// passed on as it comes, or collected for --json.
func (a *app) execStreaming(names []string, command string, f execFlags) error {
	ws, err := a.workspace(nil)
	if err == nil {
		ws, err = ws.Resolved()
	}
	if err != nil {
		return a.cannotRun(err, f.asJSON)
	}
	ctx, cancel := context.WithCancel(a.context())
	defer cancel()
	signals, stop := a.forwardSignals(cancel)
	defer stop()
	req := drivers.ExecRequest{Command: command, Timeout: f.timeout, MaxOutput: f.maxOutput, Signals: signals}
	if f.interactive {
		req.Stdin = a.stdin
	}
	if !f.asJSON {
		req.StdoutTo, req.StderrTo = a.stdout, a.stderr
	}
	res, ran, err := a.execOnRunningBroker(ctx, ws, names, req)
	if !ran {
		tgt, terr := a.targetIn(ws, names)
		if terr != nil {
			return a.cannotRun(terr, f.asJSON)
		}
		start := tgt.Clock.Now()
		res, err = tgt.ExecBrokered(ctx, req)
		a.noteExec(tgt, command, res, start, err) // history.go
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(a.stderr, "sbf: gave up on the command after three interrupts; it was ended in the sandbox")
			return silentExit(130)
		}
		return a.cannotRun(err, f.asJSON)
	}
	if f.asJSON {
		// The status passes through here too: a script need not parse the
		// JSON to learn that the command failed.
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else if res.TimedOut {
		fmt.Fprintf(a.stderr, "sbf: command timed out after %s\n", f.timeout)
	}
	if res.TimedOut {
		return silentExit(124)
	}
	if res.ExitCode != 0 {
		return silentExit(exitStatus(res.ExitCode))
	}
	return nil
}

// execOnRunningBroker runs a command through the exec broker that already
// serves the sandbox, found from the workspace's identity alone: nothing
// of the workspace is read, since the broker checks the lease and records
// the command. It runs nothing and says so (ran false) when no broker
// answers, the sandbox is not named, or stdin is passed (a broker that
// answers "booting" would have read some of it).
func (a *app) execOnRunningBroker(ctx context.Context, ws spec.Options, names []string,
	req drivers.ExecRequest) (res drivers.ExecResult, ran bool, err error) {
	if len(names) != 1 || req.Stdin != nil || a.getenv("SBF_EXEC_BROKER") == "0" {
		return res, false, nil
	}
	res, err = broker.ExecRecorded(ctx, a.brokerSocket(ws.ID, names[0]), req)
	if errors.Is(err, broker.ErrNoBroker) || errors.Is(err, drivers.ErrBooting) {
		a.debugf("no running exec broker took the command (%v); finding the sandbox", err)
		return drivers.ExecResult{}, false, nil
	}
	return res, true, err
}

// target resolves the sandbox a command names, or the only one declared.
func (a *app) target(names []string) (*sandbox.Target, error) {
	ws, err := a.workspace(nil)
	if err != nil {
		return nil, err
	}
	return a.targetIn(ws, names)
}

// targetIn is target in the workspace ws.
func (a *app) targetIn(ws spec.Options, names []string) (*sandbox.Target, error) {
	eng, err := a.engine("exec", engineFlags{})
	if err != nil {
		return nil, err
	}
	name := ""
	switch len(names) {
	case 1:
		name = names[0]
	case 0:
		r, err := a.loadSpec(nil)
		if err != nil {
			return nil, err
		}
		if len(r.Config.Sandboxes) != 1 {
			return nil, usageErrorf("name the sandbox: the workspace declares %d", len(r.Config.Sandboxes))
		}
		for n := range r.Config.Sandboxes {
			name = n
		}
	default:
		return nil, usageErrorf("one sandbox at a time, got %v", names)
	}
	tgt, err := eng.Target(ws, name)
	if err == nil {
		tgt.Brokers = a.brokers()
	}
	return tgt, err
}

// shellJoin quotes argv for sh -c, leaving a single argument as written
// (so `sbf exec -- 'echo $HOME | wc -c'` keeps its shell syntax).
func shellJoin(argv []string) string {
	if len(argv) == 1 {
		return argv[0]
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool { return !isShellSafe(r) }) < 0 {
			quoted[i] = a
			continue
		}
		quoted[i] = shellquote.Quote(a)
	}
	return strings.Join(quoted, " ")
}

func isShellSafe(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)
}

func exitStatus(code int) int {
	if code < 0 || code > 255 {
		return 255
	}
	return code
}
