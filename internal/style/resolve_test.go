package style

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 41, point 3: every host path sbf resolves (workspace roots, mounts,
// served and client roots, policy folders, reserved places) goes through
// internal/hostpath's walker, which looks at nothing off the way to the
// allowed places. filepath.EvalSymlinks answers "does not exist" before
// anyone asked whether the path was allowed: outside test code only
// internal/hostpath calls it (the operator's own programs, limactl's and a
// plugin's real paths, go through hostpath.Real too).
func TestHostPathsResolveThroughTheWalker(t *testing.T) {
	fset := token.NewFileSet()
	walkGo(t, func(path string) error {
		rel := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator)))
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "internal/hostpath/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "EvalSymlinks" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "filepath" {
					t.Errorf("%s: filepath.EvalSymlinks outside internal/hostpath: resolve with hostpath.Real "+
						"(a path the operator named) or hostpath.Resolve (a path held to allowed roots)",
						fset.Position(sel.Pos()))
				}
			}
			return true
		})
		return nil
	})
}
