package cli

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/sandbox"
)

// operator is this process's policy, loaded once: the flags a command
// registered (--workspace-root, --allow-path), the environment and the
// global config's [policy]. Workspace files and requests never widen it.
func (a *app) operator() (policy.Policy, error) {
	if a.policy != nil {
		return *a.policy, nil
	}
	global, err := policy.ReadGlobal(a.configHome())
	if err != nil {
		return policy.Policy{}, err
	}
	p, err := policy.Load(policy.Sources{Getenv: a.getenv, Global: global,
		WorkspaceRoots: a.policyFlags.roots, AllowedPaths: a.policyFlags.allow})
	if err != nil {
		return policy.Policy{}, fmt.Errorf("reading the operator policy: %w", err)
	}
	a.policy = &p
	return p, nil
}

// policyFlags are the command line's part of the operator policy.
type policyFlags struct {
	roots []string // --workspace-root, and the served -C folder
	allow []string // --allow-path
}

// copyTarget is the sandbox a copy goes to or comes from, and where on
// the host the copy may read and write: the workspace, then the
// operator's allowed paths.
func (a *app) copyTarget(name string) (*sandbox.Target, hostpath.Policy, error) {
	tgt, err := a.target([]string{name})
	if err != nil {
		return nil, hostpath.Policy{}, err
	}
	p, err := a.operator()
	if err != nil {
		return nil, hostpath.Policy{}, err
	}
	return tgt, p.HostPaths(tgt.Resolved.Root), nil
}

// servedRoots are the folders an MCP server's command line names: -C's
// workspace first when -C was given, then --workspace-root's. The folder
// the server was started in is never one of them unless named.
func (a *app) servedRoots(extra []string) error {
	a.policyFlags.roots = slices.Clone(extra)
	if !a.dirNamed {
		return nil
	}
	dir, err := filepath.Abs(a.dir)
	if err != nil {
		return err
	}
	a.policyFlags.roots = append([]string{dir}, extra...)
	return nil
}
