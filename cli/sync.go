package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/sandbox"
)

func (a *app) syncCommand() *cobra.Command {
	var from, asJSON bool
	var exclude []string
	cmd := &cobra.Command{
		Use:   "sync NAME LOCAL REMOTE",
		Short: "Make a sandbox folder hold what a host folder holds (--from: the other way)",
		Long: "sync sends a host folder to a sandbox folder, minus [sync] exclude_patterns (or --exclude) and .git\n" +
			"(unless [sync] include_git); a re-sync sends only the files whose content changed and deletes those\n" +
			"the host no longer has. With --from it copies the sandbox folder back to the host.",
		Args:              args(cobra.ExactArgs(3)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(cmd *cobra.Command, list []string) error {
			tgt, policy, err := a.copyTarget(list[0])
			if err != nil {
				return err
			}
			cwd, _ := os.Getwd()
			ctx := a.context()
			start := tgt.Clock.Now()
			if from {
				rep, err := tgt.CopyOut(ctx, policy, cwd, list[2], list[1])
				a.note(tgt, sandbox.Event{Tool: "sync", Path: list[2], Detail: "--from to " + list[1]}, start, err)
				a.reportSkipped(rep)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "copied %s:%s to %s\n", list[0], list[2], list[1])
				return nil
			}
			var given []string
			if cmd.Flags().Changed("exclude") {
				given = exclude
			}
			rep, err := tgt.Sync(ctx, policy, cwd, list[1], list[2], tgt.SyncExcludes(given))
			a.note(tgt, sandbox.Event{Tool: "sync", Path: list[2], Detail: "from " + list[1],
				Bytes: rep.ArchiveBytes}, start, err) // history.go
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, rep)
			}
			fmt.Fprintf(a.stdout, "%s → %s:%s: %d sent, %d unchanged, %d deleted (%d bytes)\n",
				rep.LocalPath, list[0], rep.RemotePath, rep.Sent, rep.Unchanged, rep.Deleted, rep.ArchiveBytes)
			return nil
		},
	}
	cmd.Flags().BoolVar(&from, "from", false, "copy the sandbox folder to the host instead")
	cmd.Flags().
		StringArrayVar(&exclude, "exclude", nil, "fnmatch `PATTERN` left out, replacing [sync] exclude_patterns (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was sent as JSON")
	a.addAllowPath(cmd)
	return cmd
}
