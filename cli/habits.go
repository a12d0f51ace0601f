package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// Docker's and kubectl's reflexes, and where each lands in sbf (issue 40):
// a word sbf has the same thing for is an alias of it (ps, rm, delete, ssh,
// logs); a word for something sbf does not do (stop, start) is answered
// with what to do instead, never with cobra's nearest spelling (stop →
// nothing, start → stats). A word sbf already uses for something else
// (ls: a guest folder) keeps its meaning and points at the other.
var (
	statusAliases  = []string{"ps"}
	destroyAliases = []string{"rm", "delete"}
	shellAliases   = []string{"ssh"}
	// statusSuggested are kubectl's and others' words for a list of
	// what runs: cobra answers them "did you mean status?".
	statusSuggested = []string{"get", "list"}
)

// noSuchVerbs are the verbs of docker and kubectl sbf has no command for,
// each with what to do instead.
var noSuchVerbs = map[string]string{
	"stop": "there is no 'sbf stop': a sandbox runs until its lease ends; 'sbf destroy NAME' deletes its VM " +
		"now (and ends its lease), 'sbf up NAME' makes it again from its spec; 'sbf task stop ID' stops a " +
		"background command",
	"start": "there is no 'sbf start': 'sbf up NAME' boots a sandbox and takes its lease ('sbf apply' also " +
		"starts a stopped VM); 'sbf task start NAME -- COMMAND' starts a background command in one",
}

// addHabits gives the commands their docker and kubectl names and adds
// the hidden commands that answer the rest; kept here, in one place.
func (a *app) addHabits(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "status":
			c.Aliases, c.SuggestFor = statusAliases, statusSuggested
		case "shell":
			c.Aliases = shellAliases
		case "destroy":
			c.Aliases = destroyAliases
			check := c.Args
			c.Args = func(cmd *cobra.Command, list []string) error {
				if err := guestPathAsSandbox(list); err != nil {
					return err
				}
				if check == nil {
					return nil
				}
				return check(cmd, list)
			}
		}
	}
	root.AddCommand(a.habitCommands()...)
}

// habitCommands are the hidden commands that answer docker's and
// kubectl's words: the verbs sbf has none for, and `logs` (task logs).
func (a *app) habitCommands() []*cobra.Command {
	var out []*cobra.Command
	for _, verb := range []string{"stop", "start"} {
		why := noSuchVerbs[verb]
		out = append(out, &cobra.Command{
			Use:                verb,
			Short:              "Not an sbf command: " + why[:strings.Index(why, ":")],
			Long:               why + ".",
			Hidden:             true,
			DisableFlagParsing: true, // whatever follows, the answer is the same
			RunE: func(*cobra.Command, []string) error {
				return &exitError{code: 2, err: errors.New(why)}
			},
		})
	}
	return append(out, a.logsCommand())
}

// logsCommand is `sbf task logs` under docker's and kubectl's word. Their
// logs take a container or a pod; a sandbox's name is answered with where
// its commands' output is.
func (a *app) logsCommand() *cobra.Command {
	cmd := a.taskLogsCommand()
	cmd.Hidden = true
	cmd.Short += " (sbf task logs)"
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, list []string) error {
		err := run(c, list)
		if err != nil && len(list) == 1 && a.declaredSandbox()(list[0]) {
			return &exitError{code: 1, err: errors.New(list[0] + " is a sandbox: 'sbf logs' (as 'sbf task logs') " +
				"prints a background task's output, and 'sbf task list' lists the tasks; a sandbox keeps no log " +
				"of its own ('sbf exec " + list[0] + " -- journalctl' reads the guest's)")}
		}
		return err
	}
	return cmd
}

// lsArgs is ls's argument rule: without a path, `sbf ls` is most likely
// docker's `ls` or kubectl's `get` for the sandboxes.
func lsArgs(cmd *cobra.Command, list []string) error {
	if len(list) == 0 {
		return &exitError{code: 2, err: errors.New("sbf ls lists a folder of a sandbox: sbf ls NAME:PATH; " +
			"the sandboxes themselves are listed by 'sbf status' (or 'sbf ps')")}
	}
	return args(cobra.ExactArgs(1))(cmd, list)
}

// guestPathAsSandbox refuses NAME:PATH where a sandbox's name is meant:
// `sbf rm dev:/tmp/x` is docker's rm of a file, not the sandbox's destroy.
func guestPathAsSandbox(names []string) error {
	for _, n := range names {
		if box, p, ok := strings.Cut(n, ":"); ok && box != "" {
			return usageErrorf("%q is a guest path, not a sandbox: destroy (rm, delete) deletes whole sandboxes; "+
				"to remove a file in one: sbf exec %s -- rm %s", n, box, p)
		}
	}
	return nil
}
