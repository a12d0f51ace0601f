package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/spec"
)

// needsWorkspace are the commands that act on a workspace's sandboxes:
// without a spec they would converge nothing and leave a .sandboxforge/
// folder wherever they were run.
var needsWorkspace = map[string]bool{
	"plan": true, "apply": true, "status": true, "up": true, "destroy": true, "extend": true,
	"reconcile": true, "exec": true, "cp": true, "sync": true, "exec-broker": true,
	"task start": true, "task status": true, "task logs": true, "task stop": true, "task list": true,
}

// findWorkspace sets the workspace root: -C pins it; otherwise the nearest
// folder, from here up, that holds a spec (as git and compose look for
// theirs). Commands that need a workspace stop here when there is none.
func (a *app) findWorkspace(cmd *cobra.Command) error {
	pinned := cmd.Flags().Changed("directory")
	if !pinned && cmd.Name() != "init" { // init writes a new workspace here, never above
		if root, ok := spec.FindWorkspace(a.dir); ok {
			a.dir = root
		}
	}
	if !needsWorkspace[strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")] || spec.HasSpec(a.dir) {
		return nil
	}
	where := "here or in any parent folder"
	if pinned {
		abs, _ := filepath.Abs(a.dir)
		where = "in " + abs
	}
	return fmt.Errorf("no %s %s; run 'sbf init' to write one (or pass -C DIR)", spec.FileName, where)
}
