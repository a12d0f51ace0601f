package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// note appends what a command did to a sandbox to its workspace's
// history. The history must not fail the command it records, so a
// failure to write it is only reported with SBF_DEBUG.
func (a *app) note(tgt *sandbox.Target, ev sandbox.Event, start time.Time, err error) {
	ev.Time, ev.Door, ev.Sandbox = start.UTC(), "cli", tgt.Sandbox
	ev.DurationMS = tgt.Clock.Now().Sub(start).Milliseconds()
	if err != nil {
		c := coded.Of(err, coded.Unknown)
		ev.ErrorCode, ev.Error = c.Code, c.Message
	}
	if werr := sandbox.WorkspaceHistory(tgt.Resolved.Root).Append(a.context(), ev,
		sandbox.Redactor(tgt.Resolved, tgt.Getenv)); werr != nil {
		a.debugf("history: %v", werr)
	}
}

// noteExec records a command sbf exec ran.
func (a *app) noteExec(tgt *sandbox.Target, command string, res drivers.ExecResult, start time.Time, err error) {
	ev := sandbox.Event{Tool: "exec", Command: command, Bytes: res.StdoutBytes + res.StderrBytes}
	if err == nil {
		ev.ExitCode = &res.ExitCode
	}
	a.note(tgt, ev, start, err)
}

// noteTask records a task command, once the sandbox is found.
func (a *app) noteTask(eng *reconcile.Engine, ws spec.Options, name string, ev sandbox.Event, start time.Time,
	err error) {
	if tgt, terr := eng.Target(ws, name); terr == nil {
		a.note(tgt, ev, start, err)
	}
}

type historyFlags struct {
	asJSON bool
	limit  int
}

func (a *app) historyCommand() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history [NAME]",
		Short: "Show the commands and tool calls that acted on the workspace's sandboxes",
		Long: "history lists, oldest first, what sbf (exec, cp, sync, cat, ls, port-forward) and MCP tools did to\n" +
			"the workspace's sandboxes, or to NAME's: time, door, tool, exit code, duration and what ran or was\n" +
			"read or written, secrets redacted; and, door cluster, a VM the cluster expired or deleted. It is\n" +
			"kept in .sandboxforge/history.jsonl (at most 8 MiB).",
		Args:              args(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			r, err := a.loadSpec(nil)
			if err != nil {
				return a.reportError(err, f.asJSON)
			}
			events, err := sandbox.WorkspaceHistory(r.Root).Read(func(ev sandbox.Event) bool {
				return len(list) == 0 || ev.Sandbox == list[0]
			}, f.limit)
			if err != nil {
				return a.reportError(err, f.asJSON)
			}
			if f.asJSON {
				return writeJSON(a.stdout, map[string]any{"events": nonNil(events)})
			}
			a.printHistory(events)
			return nil
		},
	}
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the events as JSON")
	cmd.Flags().IntVar(&f.limit, "limit", 50, "the newest events to show (0: all)")
	return cmd
}

func (a *app) printHistory(events []sandbox.Event) {
	t := newTable(a.stdout, "TIME", "DOOR", "TOOL", "SANDBOX", "EXIT", "DURATION", "WHAT")
	for _, ev := range events {
		exit := "-"
		if ev.ExitCode != nil {
			exit = strconv.Itoa(*ev.ExitCode)
		}
		if ev.ErrorCode != "" {
			exit = ev.ErrorCode
		}
		what := strings.TrimSpace(strings.Join([]string{ev.Command, ev.Path, ev.Detail}, " ")) // escaped by row
		t.row(ev.Time.Local().Format("2006-01-02 15:04:05"), ev.Door, ev.Tool, ev.Sandbox, exit,
			fmt.Sprintf("%dms", ev.DurationMS), what)
	}
	t.flush()
}
