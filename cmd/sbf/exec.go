package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
)

func (a *app) execCommand() *cobra.Command {
	var asJSON, noStdin bool
	var timeout time.Duration
	var maxOutput int
	cmd := &cobra.Command{
		Use:   "exec [NAME] -- COMMAND [ARG]...",
		Short: "Run a command in a sandbox (over a persistent SSH connection)",
		Long: "exec runs COMMAND in the sandbox NAME (optional when the workspace declares one sandbox),\n" +
			"passing stdin through and exiting with the command's exit status. With --json it prints\n" +
			"{exit_code, stdout, stderr, duration_ms, ...} instead.",
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(cmd *cobra.Command, list []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 || dash >= len(list) {
				return usageErrorf("put the command after --, as in: sbf exec NAME -- uname -a")
			}
			names, command := list[:dash], list[dash:]
			tgt, err := a.target(names)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			req := drivers.ExecRequest{Command: shellJoin(command), Timeout: timeout, MaxOutput: maxOutput}
			if !asJSON && !noStdin && !isDevNull(a.stdin) {
				req.Stdin = a.stdin
			}
			res, err := tgt.ExecBrokered(ctx, req, a.brokers())
			if err != nil {
				return a.reportError(err, asJSON)
			}
			if asJSON {
				if err := writeJSON(a.stdout, res); err != nil {
					return err
				}
				return nil
			}
			fmt.Fprint(a.stdout, res.Stdout)
			fmt.Fprint(a.stderr, res.Stderr)
			if res.StdoutTruncated || res.StderrTruncated {
				fmt.Fprintf(a.stderr, "sbf: output truncated (stdout %d bytes, stderr %d bytes; --max-output raises the cap)\n",
					res.StdoutBytes, res.StderrBytes)
			}
			if res.TimedOut {
				fmt.Fprintf(a.stderr, "sbf: command timed out after %s\n", timeout)
			}
			if res.ExitCode != 0 {
				return silentExit(exitStatus(res.ExitCode))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&noStdin, "no-stdin", "n", false, "give the command no stdin (faster: it runs on a warm guest shell)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "kill the command after this long (0: no limit)")
	cmd.Flags().IntVar(&maxOutput, "max-output", drivers.DefaultMaxOutput, "bytes of each output stream to keep")
	return cmd
}

// target resolves the sandbox a command names, or the only one declared.
func (a *app) target(names []string) (*reconcile.Target, error) {
	ws, err := a.workspace(nil)
	if err != nil {
		return nil, err
	}
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
	return eng.Target(ws, name)
}

// isDevNull reports whether stdin is /dev/null, which needs no forwarding.
func isDevNull(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err1 := f.Stat()
	dn, err2 := os.Stat(os.DevNull)
	return err1 == nil && err2 == nil && os.SameFile(fi, dn)
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
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
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
