package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/spec"
)

// ServedWorkspace is the one rule for which workspace a folder an MCP
// client named (workspace_root) is, under the operator's policy p and the
// client's own roots (nil: it declared none):
//  1. A folder outside the served roots is WORKSPACE_NOT_ALLOWED before
//     anything there is looked at (hostpath.Resolve), naming the folder
//     only as given: the answer for one that does not exist is the answer
//     for one that does. A link in a served root that leads out is
//     refused the same way.
//  2. Inside, it must exist and be a folder (WORKSPACE_CONFIG_INVALID).
//     A relative folder is refused before anything is looked at, saying
//     it must be absolute: it would be the server's working folder's,
//     never the client's.
//  3. Its workspace is the nearest folder at or above it, not above the
//     served root that holds it, with a spec: as the CLI finds one from
//     where it runs. A subfolder of a workspace gets that workspace's
//     policy (lease, egress, instance cap), state folder and instance ids,
//     never defaults of its own; a subfolder with a spec of its own is a
//     workspace of its own. A folder with no spec up to its served root
//     is a workspace of the defaults, as that root is.
//  4. That workspace lies within the client's roots.
//
// With no served roots (a server for any folder), step 1 is the same walk
// with every place allowed (hostpath.RealPart) and step 3 looks up to the top.
func ServedWorkspace(p policy.Policy, folder string, client []string) (string, error) {
	readcount.Add(readcount.Resolve)
	real, top, err := servedFolder(p, folder)
	if err != nil {
		return "", err
	}
	root := real
	if found, ok := spec.FindWorkspaceWithin(real, top); ok {
		root = found
	}
	if err := p.WorkspaceAs(root, folder, client); err != nil {
		if root != real && p.WorkspaceAs(real, folder, client) == nil {
			return "", outsideClientRoots(folder, root, client)
		}
		return "", err
	}
	return root, nil
}

// outsideClientRoots refuses a folder inside the client's roots whose
// workspace is not: serving it would serve the whole workspace.
func outsideClientRoots(folder, root string, client []string) error {
	return coded.New(policy.WorkspaceNotAllowed, map[string]any{"workspace_root": coded.Clip(folder),
		"workspace": root, "allowed_roots": client},
		"%s belongs to the workspace %s (the nearest folder at or above it with a %s), which is outside the roots "+
			"the MCP client declared; declare a root that holds it", coded.Clip(folder), root, spec.FileName)
}

// servedFolder resolves folder inside the served roots; top is the
// outermost served root that holds it ("" with no served roots).
func servedFolder(p policy.Policy, folder string) (real, top string, err error) {
	if !filepath.IsAbs(folder) {
		return "", "", workspaceInvalid(folder, "must be absolute")
	}
	abs, err := filepath.Abs(folder)
	if err != nil {
		return "", "", workspaceInvalid(folder, "cannot be resolved")
	}
	roots, resolve := p.WorkspaceRoots, hostpath.RealPart
	if len(roots) > 0 {
		resolve = func(abs string) (string, string, error) { return hostpath.Resolve(abs, roots) }
	}
	real, missing, err := resolve(abs)
	switch {
	case errors.Is(err, hostpath.ErrOutside), err == nil && len(roots) > 0 && !hostpath.Within(real, roots):
		return "", "", p.NotServed(folder)
	case errors.Is(err, syscall.ENOTDIR):
		return "", "", workspaceInvalid(folder, "must be a directory")
	case err != nil:
		return "", "", workspaceInvalid(folder, "cannot be resolved")
	case missing != "":
		return "", "", workspaceInvalid(folder, "does not exist")
	}
	for _, r := range roots {
		if hostpath.Within(real, []string{r}) && (top == "" || len(r) < len(top)) {
			top = r
		}
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return "", "", workspaceInvalid(folder, "must be a directory")
	}
	return real, top, nil
}

func workspaceInvalid(folder, what string) error {
	msg := "workspace_root " + what + ": " + coded.Clip(folder)
	return coded.New(coded.ConfigInvalid, map[string]any{"workspace_root": coded.Clip(folder),
		"errors": []string{msg}}, "%s", msg)
}
