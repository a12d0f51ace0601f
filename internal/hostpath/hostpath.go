// Package hostpath confines what sbf reads and writes on the host for a
// caller (an MCP client, an sbf command) to allowed roots: the workspace by
// default. A path must resolve, after .. and symlinks, inside a root; and
// the caller then works through an os.Root opened at that root, so a
// symlink swapped in between the check and the use cannot lead out either.
package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Denied is the code of a path outside every allowed root.
const Denied = "HOST_PATH_DENIED"

// Policy lists the host folders callers may read and write under.
type Policy struct {
	Roots []string
	// MaxCopyBytes bounds what one copy back from a guest writes on the
	// host (the operator's [policy] max_copy_bytes); zero: no bound.
	MaxCopyBytes int64
}

// Place is a confined path: Root is open at the allowed root that holds
// it and Rel is the path below it ("." for the root itself). Close it.
type Place struct {
	Root *os.Root
	Rel  string
	Abs  string // the resolved absolute path, for messages
	// RootAbs is the root's resolved absolute path.
	RootAbs string
}

func (p Place) Close() error { return p.Root.Close() }

// Confine resolves path (relative paths against base) and opens the
// allowed root that holds it. A path that does not exist yet is judged by
// its nearest existing ancestor.
func (p Policy) Confine(base, path string) (Place, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, path)
	}
	real, err := resolve(filepath.Clean(abs))
	if err != nil {
		return Place{}, fmt.Errorf("resolving %s: %w", path, err)
	}
	for _, root := range p.Roots {
		rootReal, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if !Within(real, []string{rootReal}) {
			continue
		}
		rel, _ := filepath.Rel(rootReal, real)
		r, err := os.OpenRoot(rootReal)
		if err != nil {
			return Place{}, fmt.Errorf("opening %s: %w", rootReal, err)
		}
		return Place{Root: r, Rel: rel, Abs: real, RootAbs: rootReal}, nil
	}
	return Place{}, coded.New(Denied, map[string]any{"path": clipName(path), "resolved": clipName(real),
		"allowed_roots": p.Roots},
		"%s is outside the folders sbf may use on this host (%s); allow more with --allow-path or SBF_ALLOWED_PATHS",
		clipName(path), strings.Join(p.Roots, ", "))
}

// resolve follows every symlink of an existing path, or of its nearest
// existing ancestor plus the rest.
func resolve(abs string) (string, error) {
	rest := ""
	for cur := abs; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Below is p's path relative to src, both slash paths of one fs.FS ("" for
// src itself): below ".", ".env" stays ".env", never "env".
func Below(src, p string) (string, error) {
	rel, err := filepath.Rel(filepath.FromSlash(src), filepath.FromSlash(p))
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// Within reports whether path is one of roots or lies below one (both
// absolute and clean).
func Within(path string, roots []string) bool {
	for _, root := range roots {
		rel, err := filepath.Rel(root, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}
