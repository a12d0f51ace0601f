package all_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// A backend is its package plus one import line: outside drivers/ no Go
// file (tests aside) says a linked backend's name as a string or imports
// a backend's package; what a backend knows is its registration's
// (drivers.Registration), which the others ask (issue 41.5).
func TestDriverNamesStayInDrivers(t *testing.T) {
	names := map[string]bool{}
	for _, n := range drivers.Names() {
		names[n] = true
	}
	backendPkgs := map[string]bool{}
	registering, _ := filepath.Glob("../*/*.go")
	for _, file := range registering {
		if data, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, "_test.go") &&
			strings.Contains(string(data), "drivers.Register(") {
			backendPkgs["github.com/sandboxforge/sbf/drivers/"+filepath.Base(filepath.Dir(file))] = true
		}
	}
	found := map[string]string{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			return err
		case d.IsDir() && (rel == "drivers" || rel == "kubevirt" || d.Name() == "testdata" ||
			rel != "." && strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if names[s] || backendPkgs[s] && slices.ContainsFunc(f.Imports, func(i *ast.ImportSpec) bool {
				return i.Path == lit
			}) {
				found[rel] = s
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, what := range found {
		t.Errorf("%s names the backend %s: ask the registry (drivers.Lookup, spec.Backends) instead", file, what)
	}
}
