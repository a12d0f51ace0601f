package spec

import (
	"os"
	"path/filepath"
)

// HasSpec reports whether dir holds a workspace spec under any of its
// names (.sandboxforge.toml, or v1's .orbitforge.toml and .lima-mcp.toml).
func HasSpec(dir string) bool {
	for _, f := range workspaceFiles {
		if info, err := os.Stat(filepath.Join(dir, f)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

// FindWorkspace looks for a workspace spec in start and then in each parent,
// as git and docker compose do, and returns the folder that holds one.
func FindWorkspace(start string) (string, bool) { return FindWorkspaceWithin(start, "") }

// FindWorkspaceWithin is FindWorkspace that never looks above top (when
// not ""), a folder that holds start: the nearest spec at or above a
// folder is its workspace's, so a folder below a workspace gets that
// workspace's policy, never defaults of its own.
func FindWorkspaceWithin(start, top string) (string, bool) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", false
	}
	for {
		if HasSpec(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir || dir == top {
			return "", false
		}
		dir = parent
	}
}

// WorkspaceHolding is the workspace a host folder lies in, whether or not
// anyone serves it now: the nearest folder at or above it holding a spec
// or sbf's state folder (an MCP client may have made a workspace of a
// folder with no spec). Copies from a sandbox may have written anything
// there, so nothing found there is run as sbf's own program.
func WorkspaceHolding(folder string) (string, bool) {
	dir, err := filepath.Abs(folder)
	if err != nil {
		return "", false
	}
	for {
		if HasSpec(dir) {
			return dir, true
		}
		if info, err := os.Lstat(filepath.Join(dir, Dir)); err == nil && info.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
