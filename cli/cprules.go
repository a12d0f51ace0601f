package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
)

// cpSide is one side of a copy as cp sees it before copying: the path as
// typed and what is there. Its rules are docker cp's (docs/cp.md), which
// users of docker, cp -r and scp -r already know.
type cpSide struct {
	typed  string // as the user typed it, trailing / or /. included
	exists bool
	dir    bool
	// parentDir is whether the folder that would hold a new path exists.
	parentDir bool
	// stat describes another path of the same side (for the path cp
	// finally writes, when it differs from typed).
	stat func(p string) (exists, dir bool, err error)
	join func(elem ...string) string
	base func(p string) string
}

// cpTarget is the path the source lands at, by docker cp's rules, or an
// error in those terms:
//
//	source file, destination missing     the file is written as the destination (its folder must exist;
//	                                     a destination ending in / must be an existing folder)
//	source file, destination a file      the file is overwritten
//	source file, destination a folder    the file is copied into it, under its own name
//	source folder, destination missing   the destination is made, holding the source's contents
//	source folder, destination a file    an error
//	source folder, destination a folder  the source is copied into it under its own name; a source
//	                                     ending in /. copies its contents into it instead
func cpTarget(src, dst cpSide) (string, error) {
	srcPath, dstPath := src.typed, dst.typed
	switch {
	case !src.exists:
		return "", cpError(src.typed, "%s: no such file or folder", src.typed)
	case !src.dir && (hasTrailingSep(srcPath) || specifiesCurrentDir(srcPath)):
		return "", cpError(src.typed, "%s is not a folder (a source ending in / or /. must be one)", src.typed)
	}
	dstMustBeDir := hasTrailingSep(dstPath) || specifiesCurrentDir(dstPath)
	if !dst.exists {
		switch {
		case dstMustBeDir:
			return "", cpError(dst.typed, "the folder %s does not exist (a destination ending in / must be an "+
				"existing folder: make it first, or leave the / out to copy to that name)", dst.typed)
		case !dst.parentDir:
			return "", cpError(dst.typed, "the folder that would hold %s does not exist: make it first", dst.typed)
		}
		return dstPath, nil
	}
	if !dst.dir {
		switch {
		case src.dir:
			return "", cpError(dst.typed, "cannot copy the folder %s onto the file %s", src.typed, dst.typed)
		case dstMustBeDir:
			return "", cpError(dst.typed, "%s is a file, not a folder", dst.typed)
		}
		return dstPath, nil
	}
	if src.dir && specifiesCurrentDir(srcPath) {
		return dstPath, nil // its contents, into the folder
	}
	target := dst.join(dstPath, src.base(srcPath))
	exists, dir, err := dst.stat(target)
	switch {
	case err != nil:
		return "", err
	case exists && dir && !src.dir:
		return "", cpError(target, "cannot overwrite the folder %s with the file %s", target, src.typed)
	case exists && !dir && src.dir:
		return "", cpError(target, "cannot overwrite the file %s with the folder %s", target, src.typed)
	}
	return target, nil
}

func cpError(p, format string, args ...any) error {
	return coded.New(coded.InvalidArguments, map[string]any{"path": p}, format, args...)
}

func hasTrailingSep(p string) bool {
	return len(p) > 1 && (strings.HasSuffix(p, "/") || os.PathSeparator == '\\' && strings.HasSuffix(p, `\`))
}

// specifiesCurrentDir is a path whose last element is ".": docker cp's
// "contents of" form (src/.), and . itself.
func specifiesCurrentDir(p string) bool {
	return p == "." || strings.HasSuffix(p, "/.") || os.PathSeparator == '\\' && strings.HasSuffix(p, `\.`)
}

// hostSide describes a host path for cp (relative to base).
func hostSide(base, typed string) (cpSide, error) {
	stat := func(p string) (bool, bool, error) {
		// Cleaned: the trailing / and /. are the rules', not the file system's.
		if p = filepath.Clean(p); !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, nil
		}
		if err != nil {
			return false, false, err
		}
		return true, fi.IsDir(), nil
	}
	s := cpSide{typed: typed, stat: stat, join: filepath.Join, base: filepath.Base}
	var err error
	if s.exists, s.dir, err = stat(typed); err != nil {
		return s, err
	}
	if !s.exists {
		_, s.parentDir, err = stat(filepath.Dir(filepath.Clean(typed)))
	}
	return s, err
}

// guestSide describes a guest path for cp; NAME: alone is the guest's home.
func guestSide(ctx context.Context, tgt *sandbox.Target, typed string) (cpSide, error) {
	if typed == "" {
		typed = "."
	}
	stat := func(p string) (bool, bool, error) {
		p = path.Clean(p)
		e, ok, err := tgt.StatPath(ctx, p)
		if err != nil || !ok {
			return false, false, err
		}
		if e.Type == "symlink" { // a link to a folder is that folder, as docker cp follows it
			e2, ok2, err := tgt.StatPath(ctx, p+"/.")
			return true, err == nil && ok2 && e2.Type == "directory", err
		}
		return true, e.Type == "directory", nil
	}
	s := cpSide{typed: typed, stat: stat, join: path.Join, base: path.Base}
	var err error
	if s.exists, s.dir, err = stat(typed); err != nil {
		return s, err
	}
	if !s.exists {
		_, s.parentDir, err = stat(path.Dir(path.Clean(typed)))
	}
	return s, err
}
