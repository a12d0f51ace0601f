package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

func (a *app) taskCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Background commands running detached in a sandbox (start, status, logs, stop, list)",
	}
	cmd.AddCommand(
		a.taskStartCommand(),
		a.taskStatusCommand(),
		a.taskLogsCommand(),
		a.taskStopCommand(),
		a.taskListCommand(),
	)
	return cmd
}

func (a *app) taskStartCommand() *cobra.Command {
	var cwd string
	var env []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "start NAME -- COMMAND [ARG]...",
		Short: "Start a command detached in a sandbox; it outlives sbf and dropped connections",
		Args:  args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, list []string) error {
			if dash := cmd.ArgsLenAtDash(); dash != 1 {
				return usageErrorf("put the command after --, as in: sbf task start api -- make test")
			}
			vars := map[string]string{}
			for _, kv := range env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return usageErrorf("--env %q: want KEY=VALUE", kv)
				}
				vars[k] = v
			}
			ws, err := a.workspace(nil)
			if err != nil {
				return err
			}
			eng, err := a.engine("task start", engineFlags{lockTimeout: time.Minute})
			if err != nil {
				return err
			}
			start := eng.Clock.Now()
			t, err := eng.Tasks(ws).Start(a.context(), list[0], shellJoin(list[1:]), cwd, vars)
			a.noteTask(eng, ws, list[0], sandbox.Event{Tool: "task start", Command: shellJoin(list[1:])}, start,
				err) // history.go
			if err != nil {
				return a.reportError(err, asJSON)
			}
			return a.printTask(t, asJSON)
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "guest `DIR` to run in")
	cmd.Flags().StringArrayVar(&env, "env", nil, "`KEY=VALUE` for the command (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task as JSON")
	cmd.ValidArgsFunction = a.completeSandbox
	return cmd
}

// withTask runs one task subcommand on a task id of this workspace.
func (a *app) withTask(
	use, short string,
	run func(cmd *cobra.Command, id string) (*state.Task, error),
) (*cobra.Command, *bool) {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeTask,
		RunE: func(cmd *cobra.Command, list []string) error {
			id, err := a.resolveTask(list[0])
			if err != nil {
				return a.reportError(err, asJSON)
			}
			t, err := run(cmd, id)
			if err != nil {
				return a.reportError(err, asJSON)
			}
			if t == nil {
				return nil
			}
			return a.printTask(t, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task as JSON")
	return cmd, &asJSON
}

func (a *app) taskStatusCommand() *cobra.Command {
	cmd, _ := a.withTask(
		"status TASK",
		"Report a task's status and exit code",
		func(_ *cobra.Command, id string) (*state.Task, error) {
			ws, eng, err := a.taskEngine("task status")
			if err != nil {
				return nil, err
			}
			return eng.Tasks(ws).Get(a.context(), id)
		},
	)
	return cmd
}

func (a *app) taskLogsCommand() *cobra.Command {
	var tail int
	var follow bool
	var cmd *cobra.Command
	var asJSON *bool
	cmd, asJSON = a.withTask(
		"logs TASK",
		"Print a task's output (its last lines with --tail)",
		func(_ *cobra.Command, id string) (*state.Task, error) {
			ws, eng, err := a.taskEngine("task logs")
			if err != nil {
				return nil, err
			}
			if follow {
				if tail != 0 || *asJSON {
					return nil, usageErrorf("-f prints the whole output as it comes; drop --tail and --json")
				}
				return nil, a.followTask(eng.Tasks(ws), eng.Clock, id)
			}
			t, logs, err := eng.Tasks(ws).Logs(a.context(), id, tail)
			if err != nil {
				return nil, err
			}
			note := savedOutputNote(t)
			if *asJSON {
				rep := map[string]any{"task_id": t.ID, "status": t.Status, "logs": logs, "tail": tail}
				if note != "" {
					rep["note"], rep["truncated"] = note, t.SavedOutput.Truncated
				}
				return nil, writeJSON(a.stdout, rep)
			}
			if note != "" {
				fmt.Fprintf(a.stderr, "sbf: %s\n", termsafe.Text(note))
			}
			_, err = fmt.Fprint(a.stdout, logs) // the guest's own output, passed through as sbf exec does
			return nil, err
		},
	)
	cmd.Flags().IntVar(&tail, "tail", 0, "only the last `N` lines (0: all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the output as it comes until the task ends")
	return cmd
}

func (a *app) taskStopCommand() *cobra.Command {
	var force bool
	cmd, _ := a.withTask(
		"stop TASK",
		"Stop a task's whole process group (TERM, or KILL with --force)",
		func(_ *cobra.Command, id string) (*state.Task, error) {
			ws, eng, err := a.taskEngine("task stop")
			if err != nil {
				return nil, err
			}
			return eng.Tasks(ws).Stop(a.context(), id, force)
		},
	)
	cmd.Flags().BoolVar(&force, "force", false, "KILL instead of TERM")
	return cmd
}

func (a *app) taskListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's background tasks",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			ws, eng, err := a.taskEngine("task list")
			if err != nil {
				return err
			}
			tasks, err := eng.Tasks(ws).List()
			if err != nil {
				return err
			}
			slices.SortFunc(tasks, func(x, y *state.Task) int { return x.CreatedAt.Compare(y.CreatedAt) })
			if asJSON {
				return writeJSON(a.stdout, nonNil(tasks))
			}
			t := newTable(a.stdout, "TASK", "SANDBOX", "STATUS", "EXIT", "STARTED", "COMMAND")
			for _, task := range tasks {
				exit := "-"
				if task.ExitCode != nil {
					exit = fmt.Sprint(*task.ExitCode)
				}
				t.row(task.ID, task.Sandbox, task.Status, exit, task.CreatedAt.UTC().Format(time.RFC3339), task.Command)
			}
			t.flush()
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// resolveTask is the task id a person gave, or the one task whose id it
// begins.
func (a *app) resolveTask(id string) (string, error) {
	ws, eng, err := a.taskEngine("task")
	if err != nil {
		return "", err
	}
	return eng.Tasks(ws).Resolve(id)
}

// completeTask offers the workspace's task ids, each with its sandbox,
// status and command.
func (a *app) completeTask(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ws, eng, err := a.taskEngine("task")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	tasks, err := eng.Tasks(ws).List()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, t := range tasks {
		out = append(out, t.ID+"\t"+termsafe.Text(t.Sandbox+" "+t.Status+": "+clipWords(t.Command, 40)))
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// clipWords shortens s to n characters for a completion description.
func clipWords(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (a *app) taskEngine(command string) (spec.Options, *reconcile.Engine, error) {
	ws, err := a.workspace(nil)
	if err != nil {
		return ws, nil, err
	}
	eng, err := a.engine(command, engineFlags{lockTimeout: time.Minute})
	return ws, eng, err
}

func (a *app) printTask(t *state.Task, asJSON bool) error {
	if asJSON {
		return writeJSON(a.stdout, t)
	}
	exit := ""
	if t.ExitCode != nil {
		exit = fmt.Sprintf(" (exit %d)", *t.ExitCode)
	}
	fmt.Fprintf(a.stdout, "%s  %s%s  pid %d in %s  log %s\n", t.ID, t.Status, exit, t.PID, t.Sandbox,
		termsafe.Line(t.LogPath))
	if t.ErrorMessage != "" {
		fmt.Fprintf(a.stdout, "  %s\n", termsafe.Text(t.ErrorMessage))
	}
	return nil
}

// savedOutputNote says that a task's output comes from what was saved
// when its sandbox ended, or "" when it was read from the guest.
func savedOutputNote(t *state.Task) string {
	o := t.SavedOutput
	if o == nil {
		return ""
	}
	what := "its output"
	if o.Truncated {
		what = fmt.Sprintf("the last %d KiB of its output (earlier output was not kept)", state.MaxSavedOutput>>10)
	}
	return fmt.Sprintf("task %s ended with its sandbox %s (%s at %s); this is %s, saved then", t.ID, t.Sandbox,
		o.Why, o.SavedAt.UTC().Format(time.RFC3339), what)
}

// followTask prints a task's output from the start as it comes, reading
// from a cursor as read_session does, until the task has ended and all of
// it was printed; Ctrl-C stops following, not the task.
func (a *app) followTask(tasks *sandbox.Tasks, c clock.Clock, id string) error {
	ctx := a.context()
	var cursor int64
	for {
		t, chunk, err := tasks.LogsFrom(ctx, id, cursor, sandbox.MaxLogRead, 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if _, err := a.stdout.Write(chunk.Data); err != nil { // the guest's own output, as sbf exec passes it
			return err
		}
		cursor = chunk.NextCursor
		if chunk.Done {
			if note := savedOutputNote(t); note != "" {
				fmt.Fprintf(a.stderr, "sbf: %s\n", termsafe.Text(note))
			}
			return nil
		}
		if len(chunk.Data) == 0 {
			if clock.Sleep(ctx, c, time.Second) != nil {
				return nil
			}
		}
	}
}
