package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) cpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files or folders between the host and a sandbox (NAME:PATH names the sandbox side)",
		Long: "cp copies a file or a folder in one stream: sbf cp ./src api:/work/src, or sbf cp api:/work/out ./out.\n" +
			"Exactly one side names a sandbox.",
		Args: args(cobra.ExactArgs(2)),
		RunE: func(_ *cobra.Command, list []string) error {
			srcBox, src := splitRemote(list[0])
			dstBox, dst := splitRemote(list[1])
			if (srcBox == "") == (dstBox == "") {
				return usageErrorf("exactly one of SRC and DST must be NAME:PATH")
			}
			name := srcBox + dstBox
			tgt, err := a.target([]string{name})
			if err != nil {
				return err
			}
			c, err := tgt.Copier()
			if err != nil {
				return err
			}
			ctx := context.Background()
			if dstBox != "" {
				abs, _ := filepath.Abs(src)
				return c.CopyIn(ctx, tgt.Instance, abs, dst)
			}
			abs, _ := filepath.Abs(dst)
			if err := c.CopyOut(ctx, tgt.Instance, src, abs); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "copied %s:%s to %s\n", name, src, abs)
			return nil
		},
	}
}

// splitRemote splits NAME:PATH; a plain path (or a Windows drive letter)
// has no sandbox.
func splitRemote(s string) (sandbox, path string) {
	name, p, ok := strings.Cut(s, ":")
	if !ok || len(name) < 2 || strings.ContainsAny(name, `/\.`) {
		return "", s
	}
	return name, p
}
