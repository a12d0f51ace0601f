package cli

import (
	"cmp"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/sandbox"
)

func (a *app) syncCommand() *cobra.Command {
	var from, asJSON bool
	var exclude []string
	cmd := &cobra.Command{
		Use:   "sync NAME LOCAL REMOTE | sync LOCAL NAME:REMOTE | sync NAME:REMOTE LOCAL",
		Short: "Make a sandbox folder hold what a host folder holds (--from: the other way)",
		Long: "sync sends a host folder to a sandbox folder, minus [sync] exclude_patterns (or --exclude) and .git\n" +
			"(unless [sync] include_git); a re-sync sends only the files whose content changed and deletes those\n" +
			"the host no longer has. With --from it copies the sandbox folder back to the host. The words may\n" +
			"come in sbf cp's order too: SRC then DST, with NAME:PATH naming the sandbox side.",
		Example: "  sbf sync api ./app /work/app         # the host's ./app to the guest's /work/app\n" +
			"  sbf sync ./app api:/work/app         # the same, in sbf cp's order\n" +
			"  sbf sync api:/work/app ./app         # the guest's folder back (as --from)",
		Args:              args(cobra.RangeArgs(2, 3)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(cmd *cobra.Command, list []string) error {
			if len(list) == 2 {
				var err error
				if list, err = a.syncCpOrder(list, &from); err != nil {
					return err
				}
			}
			tgt, policy, err := a.copyTarget(list[0])
			if err != nil {
				return err
			}
			cwd := a.hostBase()
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

// syncCpOrder turns sync's cp-order words (SRC DST, one of them NAME:PATH)
// into its own (NAME LOCAL REMOTE); a sandbox source means --from.
func (a *app) syncCpOrder(list []string, from *bool) ([]string, error) {
	declared := a.declaredSandbox()
	srcBox, src := splitRemote(list[0], declared, runtime.GOOS == "windows")
	dstBox, dst := splitRemote(list[1], declared, runtime.GOOS == "windows")
	switch {
	case (srcBox == "") == (dstBox == ""):
		return nil, usageErrorf("with two words, exactly one of SRC and DST must be NAME:PATH " +
			"(or give three: NAME LOCAL REMOTE)")
	case dstBox != "" && *from:
		return nil, usageErrorf("--from copies from the sandbox: name it first (NAME:PATH LOCAL)")
	case srcBox != "":
		*from = true
		return []string{srcBox, dst, cmp.Or(src, ".")}, nil
	}
	return []string{dstBox, src, cmp.Or(dst, ".")}, nil
}
