package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// cannotRunStatus is the exit status of sbf exec and sbf shell when sbf
// itself fails (as docker's 125), so it is never mistaken for the
// command's own.
const cannotRunStatus = 125

// cannotRunExits125 makes every failure of sbf's own in a command that
// passes on another command's exit status (a bad flag, no workspace, no
// such sandbox, no connection) exit 125.
func (a *app) cannotRunExits125(cmd *cobra.Command) *cobra.Command {
	to125 := func(err error) error {
		var ee *exitError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ee) && (ee.code != 2 || ee.err == nil):
			return err // the command's own status (2 too: a silent exit), or one already chosen
		case errors.As(err, &ee):
			return &exitError{code: cannotRunStatus, err: ee.err}
		}
		return &exitError{code: cannotRunStatus, err: err}
	}
	run, check := cmd.RunE, cmd.Args
	cmd.RunE = func(c *cobra.Command, list []string) error { return to125(run(c, list)) }
	cmd.Args = func(c *cobra.Command, list []string) error { return to125(check(c, list)) }
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return to125(a.findWorkspace(c)) }
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c, err, cannotRunStatus) })
	return cmd
}

// cannotRun reports sbf's own failure to run a command: exit 125, as the
// coded error envelope with --json.
func (a *app) cannotRun(err error, asJSON bool) error {
	if !asJSON {
		return &exitError{code: cannotRunStatus, err: err}
	}
	if werr := writeJSON(a.stdout, map[string]any{"error": coded.Of(err, coded.Unknown)}); werr != nil {
		return werr
	}
	return silentExit(cannotRunStatus)
}

// forwarded maps the signals sbf passes on to the names drivers use.
var forwarded = map[os.Signal]drivers.Signal{
	syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT",
}

// forwardSignals passes the signals sbf gets on to the running command.
// The third interrupt gives up on it: abandon ends it in the sandbox.
func (a *app) forwardSignals(abandon func()) (<-chan drivers.Signal, func()) {
	got := make(chan os.Signal, 4)
	for sig := range forwarded {
		signal.Notify(got, sig)
	}
	out := make(chan drivers.Signal, 4)
	done := make(chan struct{})
	go func() {
		interrupts := 0
		for {
			select {
			case sig := <-got:
				if sig == syscall.SIGINT {
					if interrupts++; interrupts == 3 {
						abandon()
						continue
					}
				}
				select {
				case out <- forwarded[sig]:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		signal.Stop(got)
		close(done)
	}
}

// runOnTerminal runs command (the login shell when empty) on a terminal
// in the sandbox, with this terminal in raw mode so every key, Ctrl-C
// included, reaches it.
func (a *app) runOnTerminal(tgt *sandbox.Target, command string) error {
	in, out, err := a.terminals()
	if err != nil {
		return &exitError{code: cannotRunStatus, err: err}
	}
	size := drivers.WindowSize{Rows: 24, Cols: 80}
	if cols, rows, err := term.GetSize(int(out.Fd())); err == nil {
		size = drivers.WindowSize{Rows: rows, Cols: cols}
	}
	ctx, stop := signal.NotifyContext(a.context(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	resize, stopResize := watchWindow(out)
	defer stopResize()
	saved, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return &exitError{code: cannotRunStatus, err: fmt.Errorf("putting the terminal in raw mode: %w", err)}
	}
	start := tgt.Clock.Now()
	code, err := tgt.Terminal(ctx, drivers.TerminalRequest{Command: command, Term: a.getenv("TERM"),
		Size: size, Resize: resize, Stdin: in, Stdout: out})
	a.noteExec(tgt, command, drivers.ExecResult{ExitCode: code}, start, err) // history.go
	term.Restore(int(in.Fd()), saved)
	if err != nil {
		return &exitError{code: cannotRunStatus, err: err}
	}
	if code != 0 {
		return silentExit(exitStatus(code))
	}
	return nil
}

// terminals returns stdin and stdout when both are terminals.
func (a *app) terminals() (in, out *os.File, err error) {
	in, okIn := a.stdin.(*os.File)
	out, okOut := a.stdout.(*os.File)
	if !okIn || !okOut || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return nil, nil, errors.New("a terminal needs one on both ends: stdin and stdout here are not both terminals " +
			"(drop -t, and pass piped input with -i)")
	}
	return in, out, nil
}

func (a *app) shellCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shell [NAME]",
		Short: "Open an interactive login shell in a sandbox",
		Long: "shell opens the guest user's login shell on a terminal in the sandbox NAME (optional when\n" +
			"the workspace declares one sandbox) and exits with its status; 125 when sbf cannot open it.",
		Args:              args(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, names []string) error {
			tgt, err := a.target(names)
			if err != nil {
				return err
			}
			return a.runOnTerminal(tgt, "")
		},
	}
	return a.cannotRunExits125(cmd)
}
