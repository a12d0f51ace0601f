package cli

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// sandboxNames are the sandboxes a shell completes: those the files
// declare (ad-hoc ones included) and those the state file records that
// are not over (a destroyed or expired one is no longer there to use).
func (a *app) sandboxNames() []string {
	root := a.dir
	if found, ok := spec.FindWorkspace(root); ok {
		root = found
	}
	names := map[string]bool{}
	if r, err := a.loadSpecAt(root, nil); err == nil {
		for n := range r.Config.Sandboxes {
			names[n] = true
		}
		if f, err := state.Read(filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID); err == nil {
			for n, rec := range f.Sandboxes {
				if !rec.Phase.Terminal() {
					names[n] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// completeSandbox completes the first argument with a sandbox name.
func (a *app) completeSandbox(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.sandboxNames(), cobra.ShellCompDirectiveNoFileComp
}

// completeSandboxes completes every argument with a sandbox name.
func (a *app) completeSandboxes(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, n := range a.sandboxNames() {
		if !slices.Contains(args, n) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCopyPath offers NAME: for a path inside a sandbox, and local
// files otherwise.
func (a *app) completeCopyPath(
	_ *cobra.Command,
	args []string,
	toComplete string,
) ([]string, cobra.ShellCompDirective) {
	if len(args) >= 2 || strings.Contains(toComplete, ":") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range a.sandboxNames() {
		out = append(out, n+":")
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveDefault
}

// snapshotNames are the snapshots the state file records of a sandbox.
func (a *app) snapshotNames(sandbox string) []string {
	root := a.dir
	if found, ok := spec.FindWorkspace(root); ok {
		root = found
	}
	var names []string
	if r, err := a.loadSpecAt(root, nil); err == nil {
		if f, err := state.Read(filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID); err == nil {
			for _, s := range f.Snapshots {
				if s.Sandbox == sandbox {
					names = append(names, s.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// completeSnapshot completes NAME SNAPSHOT [PATH]: a sandbox, one of its
// snapshots, then a host file.
func (a *app) completeSnapshot(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return a.sandboxNames(), cobra.ShellCompDirectiveNoFileComp
	case 1:
		return a.snapshotNames(args[0]), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

func (a *app) completeTarget(cmd *cobra.Command) {
	cmd.RegisterFlagCompletionFunc(
		"target",
		func(c *cobra.Command, _ []string, s string) ([]string, cobra.ShellCompDirective) {
			return a.completeSandboxes(c, nil, s)
		},
	)
}
