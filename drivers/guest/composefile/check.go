package composefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/paths"
	"github.com/compose-spec/compose-go/v2/template"
	"go.yaml.in/yaml/v4"

	"github.com/sandboxforge/sbf/drivers/guest/composerun"
	"github.com/sandboxforge/sbf/spec"
)

// outsideMessage is all sbf says about a path a compose file names that
// leaves the workspace: the same words whether the target exists or not,
// and not the path itself (it may hold an interpolated secret), so no
// answer tells anything about the host.
const outsideMessage = "names a file outside the workspace (after links): sbf loads and ships only files " +
	"inside it, through relative links"

// checker finds, before compose-go runs, every path the compose files
// make it open or make sbf ship, and holds each to the workspace: read
// through an os.Root of it, so no link leads the check itself out.
type checker struct {
	root     *os.Root
	rootDir  string // the workspace, absolute
	cwd      string // the loader's working folder: the project directory
	problems spec.Errors
	walked   map[string]bool
	// sized are the files held to composerun's size bounds, total their
	// bytes; limit is the first bound one went past.
	sized map[string]bool
	total int64
	limit error
}

// scope is where compose-go starts a file's relative paths, and the
// variables it interpolates the file with. In the top files all three
// folders are the project directory; an included file has its include's
// project directory; a file extends names is read from its own folder.
type scope struct {
	base   string // env_file, label_file, build, volumes, configs, secrets, develop.watch
	wd     string // include env_file and project_directory
	loader string // include path and extends file
	env    map[string]string
}

func newChecker(rootDir, cwd string) (*checker, error) {
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace %s: %w", rootDir, err)
	}
	return &checker{root: root, rootDir: rootDir, cwd: cwd, walked: map[string]bool{}, sized: map[string]bool{}}, nil
}

func (c *checker) Close() error { return c.root.Close() }

// inside reports whether an absolute path stays in the workspace after
// links, looking only inside it: a path that is lexically outside is
// never looked at, and os.Root refuses a link out (absolute, or .. past
// the root) before it touches whatever the link names.
func (c *checker) inside(p string) bool {
	rel, err := filepath.Rel(c.rootDir, filepath.Clean(p))
	if err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	_, err = c.root.Stat(rel)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return true
	}
	// Any other failure inside (no permission, a loop) is the loader's to
	// report; a link out is os.Root's "path escapes from parent".
	return !strings.Contains(err.Error(), "escapes")
}

// judge records a problem when p (resolved, absolute) leaves the workspace.
func (c *checker) judge(file string, n *yaml.Node, key, p string) bool {
	if p != "" && c.inside(p) {
		return true
	}
	e := spec.Error{File: file, Key: key, Message: outsideMessage}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	c.problems = append(c.problems, e)
	return false
}

// at resolves a path as compose-go does against dir: ~ is the home
// folder (never inside: sbf refuses it rather than guess which home the
// loader sees), absolute paths (Unix or Windows spelling) stay.
func at(dir, p string) string {
	switch {
	case strings.HasPrefix(p, "~"):
		return ""
	case filepath.IsAbs(p), path.IsAbs(filepath.ToSlash(p)), paths.IsWindowsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// abs makes a folder compose-go keeps relative absolute: the loader
// resolves it against its working folder.
func (c *checker) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.cwd, p)
}

// value is a scalar as compose-go interpolates it in s; false when it is
// not a string or does not interpolate (the loader reports that).
func (s scope) value(n *yaml.Node) (string, bool) {
	raw, ok := scalar(n)
	if !ok {
		return "", false
	}
	v, err := template.Substitute(raw, func(k string) (string, bool) {
		v, ok := s.env[k]
		return v, ok
	})
	return v, err == nil
}

// read reads a file inside the workspace through the root; nil when it
// cannot (the loader then reports why) or is past the size bounds.
func (c *checker) read(p string) []byte {
	if !c.size(p) {
		return nil
	}
	rel, err := filepath.Rel(c.rootDir, p)
	if err != nil {
		return nil
	}
	f, err := c.root.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, composerun.MaxFileBytes))
	if err != nil {
		return nil
	}
	return data
}

// size holds a file (inside the workspace) that the loader will read to
// composerun's bounds, each file once: false once one is past them, and
// compose-go never runs then. A file that is not there or not regular is
// the loader's to report.
func (c *checker) size(p string) bool {
	if c.limit != nil {
		return false
	}
	rel, err := filepath.Rel(c.rootDir, p)
	if err != nil || c.sized[rel] {
		return true
	}
	info, err := c.root.Stat(rel)
	if err != nil || !info.Mode().IsRegular() {
		return true
	}
	c.sized[rel], c.total = true, c.total+info.Size()
	switch {
	case info.Size() > composerun.MaxFileBytes:
		c.limit = composerun.FileTooLarge(p, info.Size())
	case c.total > composerun.MaxLoadBytes:
		c.limit = composerun.LoadTooLarge(p, c.total)
	}
	return c.limit == nil
}

// sizeIncludes sizes every file a list of includes names before any is
// parsed, so files too large together fail at once, not after most were
// parsed. Sizing goes through the root (size): nothing outside is looked at.
func (c *checker) sizeIncludes(list *yaml.Node, s scope) bool {
	for _, inc := range items(list) {
		paths := inc
		if deref(inc).Kind == yaml.MappingNode {
			paths = field(inc, "path")
		}
		for _, p := range items(paths) {
			if v, ok := s.value(p); ok && v != "" && !c.size(c.abs(at(s.loader, v))) {
				return false
			}
		}
	}
	return true
}

// walk checks one compose file (already judged inside) in scope s.
func (c *checker) walk(file string, s scope) {
	if !c.visit(file, file+"\x00"+s.base+"\x00"+s.loader) {
		return
	}
	for _, doc := range documents(c.read(file)) {
		if !c.sizeIncludes(field(doc, "include"), s) {
			return
		}
		for i, inc := range items(field(doc, "include")) {
			c.include(file, fmt.Sprintf("include[%d]", i), inc, s)
		}
		for _, kind := range []string{"services", "jobs"} {
			for _, svc := range entries(field(doc, kind)) {
				c.service(file, kind+"."+svc.key, svc.val, s)
			}
		}
		for _, kind := range []string{"configs", "secrets"} {
			for _, e := range entries(field(doc, kind)) {
				if n := field(e.val, "file"); n != nil {
					c.path(file, kind+"."+e.key+".file", n, s.base, s)
				}
			}
		}
	}
}

// maxWalks bounds the files (and extended services) one check reads.
const maxWalks = 256

// visit reports whether key (a file in a scope) is still to be checked.
// Past maxWalks it is a problem rather than a file left unchecked, which
// the loader would then read.
func (c *checker) visit(file, key string) bool {
	if c.walked[key] {
		return false
	}
	if len(c.walked) >= maxWalks {
		c.problems = append(c.problems, spec.Error{File: file, Key: "include",
			Message: fmt.Sprintf("the compose files bring in more than %d files and services; sbf checks no more", maxWalks)})
		return false
	}
	c.walked[key] = true
	return true
}

// path judges one path-valued node resolved against dir.
func (c *checker) path(file, key string, n *yaml.Node, dir string, s scope) {
	if v, ok := s.value(n); ok && v != "" {
		c.judge(file, n, key, at(dir, v))
	}
}

// loaded judges a file the loader reads (an env or label file) and holds
// it to the size bounds.
func (c *checker) loaded(file, key string, n *yaml.Node, dir string, s scope) {
	if v, ok := s.value(n); ok && v != "" {
		if p := at(dir, v); c.judge(file, n, key, p) {
			c.size(c.abs(p))
		}
	}
}

// include checks an include entry (a path, or path, env_file and
// project_directory) and then the files it brings in, in their scope.
func (c *checker) include(file, key string, n *yaml.Node, s scope) {
	pathsNode, k := n, key
	if deref(n).Kind == yaml.MappingNode {
		pathsNode, k = field(n, "path"), key+".path"
	}
	var files []string
	for i, p := range items(pathsNode) {
		v, ok := s.value(p)
		if deref(pathsNode).Kind == yaml.SequenceNode {
			k = fmt.Sprintf("%s.path[%d]", key, i)
		}
		if !ok || v == "" {
			continue
		}
		if abs := c.abs(at(s.loader, v)); c.judge(file, p, k, abs) {
			files = append(files, abs)
		}
	}
	if len(files) == 0 {
		return
	}
	sub, ok := c.includeScope(file, key, n, files[0], s)
	if !ok {
		return
	}
	for _, f := range files {
		c.walk(f, sub)
	}
}

// includeScope is where compose-go loads an include's files: its
// project directory (default: the first file's folder) and the
// variables of its env files (default: that folder's .env) over s's.
func (c *checker) includeScope(file, key string, n *yaml.Node, first string, s scope) (scope, bool) {
	pd, relwd := filepath.Dir(first), c.dirOf(s.loader, first)
	if pdNode := field(n, "project_directory"); pdNode != nil {
		v, ok := s.value(pdNode)
		if ok && v != "" {
			if filepath.IsAbs(v) {
				pd, relwd = v, v
			} else {
				pd, relwd = filepath.Join(s.wd, v), c.dirOf(s.loader, v)
			}
			if !c.judge(file, pdNode, key+".project_directory", c.abs(at(s.wd, v))) {
				return scope{}, false
			}
		}
	}
	pd = c.abs(pd)
	var envFiles []string
	envNode := field(n, "env_file")
	for i, e := range items(envNode) {
		v, ok := s.value(e)
		if !ok || v == "" || v == "/dev/null" {
			continue
		}
		k := key + ".env_file"
		if deref(envNode).Kind == yaml.SequenceNode {
			k = fmt.Sprintf("%s[%d]", k, i)
		}
		p := c.abs(at(s.wd, v))
		if !c.judge(file, e, k, p) {
			return scope{}, false
		}
		envFiles = append(envFiles, p)
	}
	if envNode == nil {
		if dot := filepath.Join(pd, ".env"); c.exists(dot) {
			if !c.judge(file, n, key+" (its project directory's .env)", dot) {
				return scope{}, false
			}
			envFiles = append(envFiles, dot)
		}
	}
	return scope{base: join(s.base, relwd), wd: c.abs(relwd), loader: pd, env: c.envWith(s.env, envFiles)}, true
}

// dirOf is compose-go's localResourceLoader.Dir: the folder of p (or p,
// when it is a folder) relative to the loader's folder.
func (c *checker) dirOf(loader, p string) string {
	d := at(loader, p)
	if !c.isDir(d) {
		d = at(loader, filepath.Dir(p))
	}
	if rel, err := filepath.Rel(loader, d); err == nil {
		return rel
	}
	return d
}

func (c *checker) isDir(p string) bool {
	rel, err := filepath.Rel(c.rootDir, p)
	if err != nil || !c.inside(p) {
		return false
	}
	info, err := c.root.Stat(rel)
	return err == nil && info.IsDir()
}

// exists reports whether something is at p, looking only at the last
// step without following it: a link is judged, not followed.
func (c *checker) exists(p string) bool {
	rel, err := filepath.Rel(c.rootDir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return true // outside: judge it (and say nothing about it)
	}
	_, err = c.root.Lstat(rel)
	return !errors.Is(err, fs.ErrNotExist)
}

// envWith is env with the variables of the given files (already judged
// inside), as compose-go reads an include's: the earlier value wins.
func (c *checker) envWith(env map[string]string, files []string) map[string]string {
	out := maps.Clone(env)
	fromFiles := map[string]string{}
	for _, f := range files {
		vars, err := dotenv.ParseWithLookup(strings.NewReader(string(c.read(f))), func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			v, ok := fromFiles[k]
			return v, ok
		})
		if err != nil {
			continue
		}
		maps.Copy(fromFiles, vars)
	}
	for k, v := range fromFiles {
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	return out
}
