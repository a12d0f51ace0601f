package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/buildinfo"
)

// version is what sbf calls itself (MCP server info, lock notes). Release
// builds set it at link time in internal/buildinfo; a source build says
// "devel".
var version = buildinfo.Read().Version

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print sbf's version, commit and build date",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if asJSON {
				return writeJSON(a.stdout, buildinfo.Read())
			}
			_, err := fmt.Fprintln(a.stdout, versionLine(buildinfo.Read()))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print version, commit, date and go as JSON")
	return cmd
}

// versionLine is `sbf version` and `sbf --version`: one line a bug report
// can quote.
func versionLine(info buildinfo.Info) string {
	commit := info.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "unknown"
	}
	if info.Modified {
		commit += ", modified"
	}
	date := info.Date
	if date == "" {
		date = "date unknown"
	}
	return fmt.Sprintf("sbf %s (commit %s, built %s, %s %s/%s)", info.Version, commit, date, info.Go, info.OS, info.Arch)
}
