package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Why a path cannot be judged, or leaves where it must stay.
var (
	errOutside  = errors.New("leads outside the destination")
	errClimbs   = errors.New("goes up (..) out of a link or a name not there yet, so where it leads can change")
	errLoop     = errors.New("follows more than 40 links (a loop)")
	errAbsolute = errors.New("is an absolute path")
	errReplaces = errors.New("would replace a folder")
)

// resolver finds where a path below a root leads, component by component
// as the kernel will: a link's target replaces it in place, and .. goes to
// the folder the walk is really in, never to the lexical parent. It reads
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

// walk is one resolution in progress: the real folders reached (each a
// name below the root), how far .. may climb, and the links followed.
type walk struct {
	stack []string
	floor int
	links int
}

// resolve returns the real path (slash-separated, below the root; "" for
// the root) rel leads to. followLast follows a link at its end too.
func (r *resolver) resolve(rel string, followLast bool) (string, error) {
	w := &walk{}
	err := r.walk(w, split(rel), followLast)
	return strings.Join(w.stack, "/"), err
}

// target returns where a link at the real folder dir (slash, below the
// root) with this target leads. Absolute targets are refused: whoever
// made the link cannot know where the copy lands.
func (r *resolver) target(dir, target string) (string, error) {
	if isAbs(target) {
		return "", errAbsolute
	}
	w := &walk{stack: split(dir)}
	err := r.walk(w, split(target), true)
	return strings.Join(w.stack, "/"), err
}

func (r *resolver) walk(w *walk, comps []string, followLast bool) error {
	for i, c := range comps {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			if len(w.stack) == 0 {
				return errOutside
			}
			if len(w.stack) <= w.floor {
				return errClimbs
			}
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		last := lastName(comps[i+1:])
		kind, target, err := r.lookup(strings.Join(append(w.stack, c), "/"))
		if err != nil {
			return err
		}
		if kind != fs.ModeSymlink || last && !followLast {
			w.stack = append(w.stack, c)
			if kind != fs.ModeDir {
				w.floor = len(w.stack)
			}
			continue
		}
		if w.links++; w.links > maxLinks {
			return errLoop
		}
		if err := r.follow(w, target); err != nil {
			return err
		}
		w.floor = len(w.stack)
	}
	return nil
}

// follow walks a link's target from the folder holding the link (or from
// the root, for an absolute target naming a path below it).
func (r *resolver) follow(w *walk, target string) error {
	if isAbs(target) {
		rest, ok := strings.CutPrefix(target, strings.TrimRight(r.rootAbs, `/\`))
		if r.rootAbs == "" || !ok || rest != "" && !os.IsPathSeparator(rest[0]) && rest[0] != '/' {
			return errOutside
		}
		w.stack, w.floor, target = w.stack[:0], 0, rest
	}
	return r.walk(w, split(target), true)
}

// lookup says what rel (real folders, then one name) is: a link (with its
// target), a folder, a file (0), or nothing (0 too: a name not there yet
// behaves as a file would, since either may become a link).
func (r *resolver) lookup(rel string) (fs.FileMode, string, error) {
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
	case info.IsDir():
		return fs.ModeDir, "", nil
	}
	return 0, "", nil
}

// lastName reports whether nothing but "." and "" follow.
func lastName(rest []string) bool {
	for _, c := range rest {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// split cuts a path at every separator this host knows, never cleaning it:
// a/../b is three steps, since a may be a link.
func split(p string) []string {
	if p == "" {
		return nil
	}
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r < 0x80 && os.IsPathSeparator(uint8(r)) })
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
