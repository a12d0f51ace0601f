package style

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// inForeground are the processes sbf starts in the terminal's foreground
// process group, each with why: everything else goes through internal/proc
// (issue 40: a Ctrl-C at a terminal reached limactl too and killed the
// create sbf had promised to finish).
var inForeground = map[string]string{
	"cli/server.go":                "sbf-server is sbf's other half: it hears Ctrl-C as sbf does",
	"drivers/lima/exec.go":         "limactl shell stands in for the guest command, which may read the terminal",
	"drivers/sim/terminal_unix.go": "the sim's shell is the guest's terminal",
}

// Every child process of sbf is started through internal/proc (its own
// process group or session), or is listed in inForeground with a reason:
// outside test code, each exec.Command or exec.CommandContext is followed
// in its function by a proc call, or its file is listed.
func TestChildrenAreOutOfTheTerminalsReach(t *testing.T) {
	fset := token.NewFileSet()
	walkGo(t, func(path string) error {
		rel := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator)))
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "internal/proc/") ||
			strings.HasPrefix(rel, "kubevirt/") || strings.HasPrefix(rel, "internal/tools/") ||
			strings.Contains(rel, "/internal/stubgen/") || strings.HasPrefix(rel, "e2e/") ||
			strings.HasPrefix(rel, "internal/testutil/") || strings.Contains(rel, "test/") ||
			inForeground[rel] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			var starts []token.Pos
			shielded := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok {
					switch {
					case x.Name == "exec" && (sel.Sel.Name == "Command" || sel.Sel.Name == "CommandContext"):
						starts = append(starts, sel.Pos())
					case x.Name == "proc":
						shielded = true
					}
				}
				return true
			})
			for _, p := range starts {
				if !shielded {
					t.Errorf("%s: a child process in the terminal's foreground group: start it with "+
						"internal/proc (Command, Group or Detach), or list its file in inForeground with why",
						fset.Position(p))
				}
			}
		}
		return nil
	})
}
