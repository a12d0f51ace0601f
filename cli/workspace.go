package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/coded"
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

// findWorkspace sets the workspace root: the nearest folder, from here
// (or, as git -C does, from -C DIR) up, that holds a spec, as git and
// compose look for theirs. Commands that need a workspace stop here when
// there is none, in JSON when --json asked for it.
func (a *app) findWorkspace(cmd *cobra.Command) error {
	err := a.findWorkspaceFrom(cmd)
	if f := cmd.Flags().Lookup("json"); err != nil && f != nil && f.Value.String() == "true" {
		return a.reportError(err, true)
	}
	return err
}

func (a *app) findWorkspaceFrom(cmd *cobra.Command) error {
	pinned := cmd.Flags().Changed("directory")
	a.dirNamed = pinned
	if pinned {
		fi, err := os.Stat(a.dir)
		switch {
		case err != nil:
			return &exitError{code: 2, err: coded.New(coded.InvalidArguments, map[string]any{"directory": a.dir},
				"-C %s: no such folder", a.dir)}
		case !fi.IsDir():
			return &exitError{code: 2, err: coded.New(coded.InvalidArguments, map[string]any{"directory": a.dir},
				"-C %s: a file, not a folder", a.dir)}
		}
	}
	start, _ := filepath.Abs(a.dir)
	a.startDir = start
	if cmd.Name() != "init" { // init writes a new workspace where it is told, never above
		if root, ok := spec.FindWorkspace(a.dir); ok {
			a.dir = root
		}
	}
	if !needsWorkspace[strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")] || spec.HasSpec(a.dir) {
		return nil
	}
	where := "here or in any parent folder"
	if pinned {
		where = "in " + start + " or any parent folder"
	}
	return coded.New(coded.ConfigInvalid, map[string]any{"directory": start},
		"no %s %s; run 'sbf init' to write one (or pass -C DIR)", spec.FileName, where)
}

// hostBase is the folder relative host paths start from: the -C folder,
// as if sbf had been started there (git -C), else the working folder.
func (a *app) hostBase() string {
	if a.startDir != "" {
		return a.startDir
	}
	cwd, _ := os.Getwd()
	return cwd
}
