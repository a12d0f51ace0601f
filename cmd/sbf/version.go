package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print sbf's version",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			v := map[string]string{"version": version, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH}
			if info, ok := debug.ReadBuildInfo(); ok && version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
				v["version"] = info.Main.Version
			}
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			_, err := fmt.Fprintf(a.stdout, "sbf %s (%s %s/%s)\n", v["version"], v["go"], v["os"], v["arch"])
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
