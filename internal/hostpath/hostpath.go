// Package hostpath confines what sbf reads and writes on the host for a
// caller (an MCP client, an sbf command) to allowed roots: the workspace by
// default. A path must resolve, after .. and symlinks, inside a root; and
// the caller then works through an os.Root opened at that root, so a
// symlink swapped in between the check and the use cannot lead out either.
package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Denied is the code of a path outside every allowed root.
const Denied = "HOST_PATH_DENIED"

// Policy lists the host folders callers may read and write under, and
// what a write carrying guest data may not touch or exceed there.
type Policy struct {
	Roots []string
	// Reserved are host places no guest data is written to, whatever root
	// holds them (the operator's environment locates them).
	Reserved *Places
	// MaxCopyBytes is the most one copy from a sandbox writes (as its
	// archive counts it); zero or less is DefaultMaxCopyBytes.
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
// its nearest existing ancestor. Links on the way are followed as the
// kernel follows them (a/.. is where a leads, then up, never lexically
// "."), looking only at what lies on the way to a root (Resolve): a path
// outside every root is refused with an answer that names only the path
// given, the same whether it exists or not.
func (p Policy) Confine(base, path string) (Place, error) {
	return p.confine(rawAbs(base, path), path, true)
}

// confine keeps a link at abs's end as it is unless followLast.
func (p Policy) confine(abs, shown string, followLast bool) (Place, error) {
	var roots []string
	for _, root := range p.Roots {
		if rootReal, err := Real(root); err == nil {
			roots = append(roots, rootReal)
		}
	}
	real, missing, err := (&host{roots: roots}).resolve(abs, followLast)
	switch {
	case errors.Is(err, ErrOutside):
		return Place{}, p.denied(shown)
	case err != nil:
		return Place{}, fmt.Errorf("resolving %s: %w", clipName(shown), err)
	}
	real = filepath.Join(real, missing)
	for _, rootReal := range roots {
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
	return Place{}, p.denied(shown)
}

// denied names only the path as given: never where it led, nor whether
// anything is there.
func (p Policy) denied(shown string) error {
	return coded.New(Denied, map[string]any{"path": clipName(shown), "allowed_roots": p.Roots},
		"%s is outside the folders sbf may use on this host (%s); allow more with --allow-path or SBF_ALLOWED_PATHS",
		clipName(shown), strings.Join(p.Roots, ", "))
}

// rawAbs is path made absolute against base without cleaning it: cleaning
// would take a/.. away before anyone looked at what a is.
func rawAbs(base, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return strings.TrimRight(base, `/\`) + string(filepath.Separator) + path
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

// Within reports whether path is one of roots or lies below one (all
// clean, and all absolute or all below one folder).
func Within(path string, roots []string) bool {
	for _, root := range roots {
		rel, err := filepath.Rel(root, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}
