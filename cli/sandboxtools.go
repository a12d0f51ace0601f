package cli

import "github.com/spf13/cobra"

// sandboxToolCommands act on a running sandbox besides exec and copies
// (issue 24): its files, its ports, its history, its stats, its
// snapshots, clones and forks.
func (a *app) sandboxToolCommands() []*cobra.Command {
	return []*cobra.Command{a.catCommand(), a.lsCommand(), a.portForwardCommand(), a.historyCommand(),
		a.statsCommand(), a.healthCommand(), a.snapshotCommand(), a.cloneCommand(), a.forkCommand()}
}
