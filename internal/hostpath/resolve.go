package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrOutside says that a path, or a link on it, leads away from the roots.
var ErrOutside = errors.New("outside the allowed roots")

// maxLinks bounds the links one resolution follows, as the kernel's 40.
const maxLinks = 40

// Resolve follows the links of path (absolute) one element at a time and
// looks only at what lies on the way to a root: a folder that holds a root,
// the root, what is below it, and the entries of a folder that holds a
// root (such an entry may be a link into a root, as /tmp is on macOS).
// Anything else is ErrOutside before it is looked at, so the answer for a
// path outside the roots is the same whether something is there or not:
// no existence oracle. A .. (in path, or in a link's target) is taken
// where the walk really is, as the kernel takes it. real is link-free;
// missing is the part of the path below real that does not exist yet
// ("" when all of it does), and is non-empty
// only inside a root. A real that merely holds a root (path "/") is
// returned as it is: callers check Within. roots are absolute, clean and
// link-free.
func Resolve(path string, roots []string) (real, missing string, err error) {
	return walker{roots: roots}.resolve(path)
}

// Real is the link-free path of an existing absolute path the operator
// named (a workspace root, an allowed folder, a client's declared root),
// by the walk Resolve takes, with every place on its way allowed.
func Real(path string) (string, error) {
	real, missing, err := RealPart(path)
	if err == nil && missing != "" { // as the walk's lstat said it
		err = &fs.PathError{Op: "lstat", Path: filepath.Join(real, elements(missing)[0]), Err: syscall.ENOENT}
	}
	if err != nil {
		return "", err
	}
	return hostName(real), nil
}

// RealPart is Resolve with every place on its way allowed: the link-free
// path of path's longest existing part, and the rest below it.
func RealPart(path string) (real, missing string, err error) {
	return walker{anywhere: true}.resolve(path)
}

func (w walker) resolve(path string) (real, missing string, err error) {
	p := path // not cleaned: a/.. is where a leads, then up, as the kernel walks it
	if !filepath.IsAbs(p) {
		return "", "", errors.New("not an absolute path")
	}
	vol := filepath.VolumeName(p)
	w.cur, w.rest = vol+string(filepath.Separator), elements(p[len(vol):])
	for len(w.rest) > 0 {
		if err := w.step(); err != nil {
			if errors.Is(err, errMissing) {
				return w.cur, filepath.Join(w.rest...), nil
			}
			return "", "", err
		}
	}
	return w.cur, "", nil
}

// errMissing ends a walk at an element that does not exist (inside a root).
var errMissing = errors.New("missing")

// walker is a resolution under way: cur is link-free and on the way to a
// root; rest are the elements still to follow, link targets spliced in.
type walker struct {
	roots    []string
	anywhere bool // every place is on the way (a path the operator named)
	cur      string
	rest     []string
	links    int
}

func (w *walker) step() error {
	elem := w.rest[0]
	w.rest = w.rest[1:]
	switch elem {
	case ".":
		return nil
	case "..":
		w.cur = filepath.Dir(w.cur) // cur is link-free: its parent is where .. leads
		return nil
	}
	next := filepath.Join(w.cur, elem)
	info, err := os.Lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist) && w.within(next):
		if slices.Contains(w.rest, "..") { // a link's target climbs out of a folder that is not there
			return &fs.PathError{Op: "lstat", Path: next, Err: fs.ErrNotExist}
		}
		w.rest = append([]string{elem}, w.rest...)
		return errMissing
	case err != nil && w.within(w.cur):
		return err // not a folder, no permission: inside a root, so it may be said
	case err != nil:
		return ErrOutside
	case isLink(info):
		return w.follow(next)
	case !w.onTheWay(next):
		return ErrOutside
	}
	w.cur = next
	return nil
}

// follow splices a link's target in front of what is left.
func (w *walker) follow(link string) error {
	if w.links++; w.links > maxLinks {
		return errors.New("too many links")
	}
	target, err := os.Readlink(link)
	if err != nil {
		return ErrOutside
	}
	if vol := filepath.VolumeName(target); filepath.IsAbs(target) {
		w.cur = vol + string(filepath.Separator)
		target = target[len(vol):]
		if !w.onTheWay(w.cur) { // another volume
			return ErrOutside
		}
	}
	w.rest = append(elements(target), w.rest...)
	return nil
}

func elements(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) })
}

// isLink: a symlink, or on Windows a junction, which Lstat reports as
// irregular and Readlink reads.
func isLink(info fs.FileInfo) bool {
	return info.Mode()&fs.ModeSymlink != 0 || runtime.GOOS == "windows" && info.Mode()&fs.ModeIrregular != 0
}

func (w *walker) within(p string) bool { return w.anywhere || Within(p, w.roots) }

// onTheWay reports whether p is a root, below one, or holds one.
func (w *walker) onTheWay(p string) bool {
	if w.within(p) {
		return true
	}
	for _, r := range w.roots {
		if Within(r, []string{p}) {
			return true
		}
	}
	return false
}
