package style

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// Every sbf process pays for its packages' initialisation, `sbf exec`
// included: a package-level regexp.MustCompile compiles at every start
// whether the process uses it or not. Such patterns use lazyre.New (or a
// hand-written rule, as internal/names).
func TestNoPatternCompilesAtInit(t *testing.T) {
	fset := token.NewFileSet()
	walkGo(t, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				ast.Inspect(g, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "MustCompile" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" {
							t.Errorf("%s: a package-level regexp.MustCompile; use lazyre.New", fset.Position(sel.Pos()))
						}
					}
					return true
				})
			}
		}
		return nil
	})
}
