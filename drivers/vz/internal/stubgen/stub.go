package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/ast/astutil"
)

// cTypes are the Go types that stand in for cgo's C types left in
// declarations once bodies are gone (all in unexported signatures).
var cTypes = map[string]string{
	"char": "byte", "int": "int32", "uint": "uint32", "long": "int64", "ulong": "uint64",
	"uintptr_t": "uintptr", "bool": "bool", "double": "float64", "float": "float32",
}

// generate writes a stub of the module in src to dst: its packages (but
// commands, examples and internal packages no public one imports), each
// file keeping its name (so _arm64.go files stay arm64-only) and its
// //go:build line, with every declaration and signature as the module
// has it, function bodies replaced by panics and cgo removed. What a
// caller can name and how it must call it is therefore the module's own
// API, for every GOOS/GOARCH.
func generate(src, dst, version string) error {
	mod, err := readModule(src)
	if err != nil {
		return err
	}
	path := mod.Module.Mod.Path
	files := map[string]stubbed{} // by path relative to src
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		out, imports, err := stubFile(p, path+"@"+version)
		if err == nil && out != nil {
			files[rel] = stubbed{out, imports}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("generating the stub of %s: %w", path, err)
	}
	keep := reachable(path, files)
	imported := map[string]bool{}
	for rel, f := range files {
		if !keep[filepath.ToSlash(filepath.Dir(rel))] {
			continue
		}
		for _, i := range f.imports {
			imported[i] = true
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, rel), f.src, 0o644); err != nil {
			return err
		}
	}
	return writeGoMod(mod, dst, imported)
}

type stubbed struct {
	src     []byte
	imports []string
}

// reachable is the set of package folders (relative, "." for the root)
// that are public or imported, directly or not, by a public one.
func reachable(module string, files map[string]stubbed) map[string]bool {
	imports := map[string][]string{}
	for rel, f := range files {
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, i := range f.imports {
			if i == module || strings.HasPrefix(i, module+"/") {
				imports[dir] = append(imports[dir], strings.TrimPrefix(strings.TrimPrefix(i, module), "/"))
			}
		}
		if _, ok := imports[dir]; !ok {
			imports[dir] = nil
		}
	}
	keep := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if dir == "" {
			dir = "."
		}
		if keep[dir] {
			return
		}
		keep[dir] = true
		for _, d := range imports[dir] {
			visit(d)
		}
	}
	for dir := range imports {
		if dir != "internal" && !strings.HasPrefix(dir, "internal/") && !strings.Contains(dir, "/internal/") {
			visit(dir)
		}
	}
	return keep
}

func skipDir(rel, name string) bool {
	return rel != "." && (name == "testdata" || name == "cmd" || name == "example" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"))
}

func readModule(src string) (*modfile.File, error) {
	b, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return nil, err
	}
	return modfile.Parse(filepath.Join(src, "go.mod"), b, nil)
}

// writeGoMod keeps the module's path and go version, and only the
// requirements the stub still imports (bodies took most imports along).
func writeGoMod(mod *modfile.File, dst string, imported map[string]bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n", mod.Module.Mod.Path, mod.Go.Version)
	for _, r := range mod.Require {
		for i := range imported {
			if i == r.Mod.Path || strings.HasPrefix(i, r.Mod.Path+"/") {
				fmt.Fprintf(&b, "\nrequire %s %s\n", r.Mod.Path, r.Mod.Version)
				break
			}
		}
	}
	return os.WriteFile(filepath.Join(dst, "go.mod"), []byte(b.String()), 0o644)
}

// stubFile returns the stub of one source file and the imports it keeps;
// nil for a main package.
func stubFile(path, origin string) ([]byte, []string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	if f.Name.Name == "main" {
		return nil, nil, nil
	}
	build := buildLine(f)
	stripComments(f)
	astutil.DeleteImport(fset, f, "C")
	astutil.Apply(f, stubBodies, nil)
	astutil.Apply(f, replaceCTypes, nil)
	if pos, ok := findC(f); ok {
		return nil, nil, fmt.Errorf("%s: cgo is still used after stubbing", fset.Position(pos))
	}
	kept := pruneImports(fset, f)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// Code generated by stubgen from %s; DO NOT EDIT.\n\n", origin)
	if build != "" {
		fmt.Fprintf(&buf, "%s\n\n", build)
	}
	if err := printer.Fprint(&buf, fset, f); err != nil {
		return nil, nil, err
	}
	out, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the stub does not parse: %w", path, err)
	}
	return out, kept, nil
}

// buildLine is the file's //go:build line, if any.
func buildLine(f *ast.File) string {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				return c.Text
			}
		}
	}
	return ""
}

// stripComments drops every comment: the cgo preamble, //export
// directives, docs. Only the build line matters, and it is kept apart.
func stripComments(f *ast.File) {
	f.Comments, f.Doc = nil, nil
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			n.Doc = nil
		case *ast.GenDecl:
			n.Doc = nil
		case *ast.Field:
			n.Doc, n.Comment = nil, nil
		case *ast.ValueSpec:
			n.Doc, n.Comment = nil, nil
		case *ast.TypeSpec:
			n.Doc, n.Comment = nil, nil
		case *ast.ImportSpec:
			n.Doc, n.Comment = nil, nil
		}
		return true
	})
}

// stubBodies replaces the body of every function and function literal.
func stubBodies(c *astutil.Cursor) bool {
	switch n := c.Node().(type) {
	case *ast.FuncDecl:
		if n.Body != nil {
			n.Body = panicBody()
		}
		return true
	case *ast.FuncLit:
		n.Body = panicBody()
	}
	return true
}

func panicBody() *ast.BlockStmt {
	call := &ast.CallExpr{
		Fun:  ast.NewIdent("panic"),
		Args: []ast.Expr{&ast.BasicLit{Kind: token.STRING, Value: strconv.Quote("vz stub")}},
	}
	return &ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: call}}}
}

// replaceCTypes turns C.T in what is left (signatures and type
// declarations) into the Go type of the same shape.
func replaceCTypes(c *astutil.Cursor) bool {
	sel, ok := c.Node().(*ast.SelectorExpr)
	if !ok || !isC(sel) {
		return true
	}
	if t, ok := cTypes[sel.Sel.Name]; ok {
		c.Replace(ast.NewIdent(t))
	}
	return true
}

func isC(sel *ast.SelectorExpr) bool {
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "C"
}

func findC(f *ast.File) (token.Pos, bool) {
	var at token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isC(sel) && !at.IsValid() {
			at = sel.Pos()
		}
		return !at.IsValid()
	})
	return at, at.IsValid()
}

// pruneImports deletes the imports only bodies used and returns the rest.
func pruneImports(fset *token.FileSet, f *ast.File) []string {
	var kept []string
	for _, spec := range slices.Clone(f.Imports) {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := ""
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name == "_" || !astutil.UsesImport(f, path) {
			astutil.DeleteNamedImport(fset, f, name, path)
			continue
		}
		kept = append(kept, path)
	}
	return kept
}
