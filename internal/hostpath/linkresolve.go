package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// resolver is the link judge's view of a root: the walk (walker) reads
// what is in the root now, plus pending links (the one being judged).
//
// Where a path leads may change later only if something on its way does:
// sbf never turns a folder into a link, but it may make a link where there
// was nothing, and replace a link. So after a link, a missing name or a
// file, .. may not climb back out (errClimbs): what it reaches depends on
// what that name will become. A link written under this rule leads, now
// and after any later write of sbf's, where its own judgment said: below
// the links it went through, which were judged the same way.
type resolver struct {
	root    *os.Root
	rootAbs string            // the root's absolute, link-free path ("" refuses every absolute target)
	pending map[string]string // links not made yet: slash path below the root → target
}

// resolve returns the real path (slash-separated, below the root; "" for
// the root) rel leads to. followLast follows a link at its end too.
func (r *resolver) resolve(rel string, followLast bool) (string, error) {
	return r.walk(nil, rel, followLast)
}

// target returns where a link at the real folder dir (slash, below the
// root) with this target leads. Absolute targets are refused: whoever
// made the link cannot know where the copy lands.
func (r *resolver) target(dir, target string) (string, error) {
	if isAbs(target) {
		return "", errAbsolute
	}
	return r.walk(split(dir), target, true)
}

func (r *resolver) walk(at []string, rel string, followLast bool) (string, error) {
	w := walker{view: r, at: at, rest: split(rel), judge: true, followLast: followLast}
	_, err := w.walk()
	return strings.Join(w.at, "/"), err
}

func (r *resolver) lookup(at []string, name string) (fs.FileMode, string, error) {
	return r.kindOf(strings.Join(append(at[:len(at):len(at)], name), "/"))
}

// kindOf says what rel (real folders, then one name) is: a link (with its
// target), a folder, or 0: a file or nothing (the walk takes both alike:
// either may become a link).
func (r *resolver) kindOf(rel string) (fs.FileMode, string, error) {
	if target, ok := r.pending[rel]; ok {
		return fs.ModeSymlink, target, nil
	}
	info, err := r.root.Lstat(filepath.FromSlash(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return 0, "", nil
	case err != nil:
		return 0, "", err
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := r.root.Readlink(filepath.FromSlash(rel))
		return fs.ModeSymlink, target, err
	}
	return info.Mode().Type() & fs.ModeDir, "", nil
}

// restart takes an absolute target only when it names a path below the root.
func (r *resolver) restart(target string) (string, bool, error) {
	if !isAbs(target) {
		return target, false, nil
	}
	rest, ok := strings.CutPrefix(target, strings.TrimRight(r.rootAbs, `/\`))
	if r.rootAbs == "" || !ok || rest != "" && !os.IsPathSeparator(rest[0]) && rest[0] != '/' {
		return "", true, errOutside
	}
	return rest, true, nil
}

// isAbs reports whether a link target starts anywhere but at its link's
// folder, on any host: /x, \x, C:x, C:\x.
func isAbs(target string) bool {
	return strings.HasPrefix(target, "/") || strings.HasPrefix(target, `\`) || filepath.IsAbs(target) ||
		filepath.VolumeName(target) != "" || len(target) > 1 && target[1] == ':' && isLetter(target[0])
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// below reports whether the slash path p is dir or lies under it.
func below(dir, p string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
