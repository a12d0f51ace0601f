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
)

// ErrOutside says that a path, or a link on it, leads away from the roots.
var ErrOutside = errors.New("outside the allowed roots")

// Why a walk stops (the link judge reports these words).
var (
	errOutside  = errors.New("leads outside the destination")
	errClimbs   = errors.New("goes up (..) out of a link or a name not there yet, so where it leads can change")
	errLoop     = errors.New("follows more than 40 links (a loop)")
	errAbsolute = errors.New("is an absolute path")
	errReplaces = errors.New("would replace a folder")
)

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
	return (&host{roots: roots}).resolve(path, true)
}

// Real is the link-free path of an existing absolute path the operator
// named (a workspace root, an allowed folder, a client's declared root),
// by the walk Resolve takes, with every place on its way allowed.
func Real(path string) (string, error) {
	real, missing, err := RealPart(path)
	if err == nil && missing != "" { // as the walk's lstat said it
		return "", &fs.PathError{Op: "lstat", Path: filepath.Join(real, split(missing)[0]), Err: syscall.ENOENT}
	}
	return real, err
}

// RealPart is Resolve with every place on its way allowed: the link-free
// path of path's longest existing part, and the rest below it.
func RealPart(path string) (real, missing string, err error) {
	real, missing, err = (&host{anywhere: true}).resolve(path, true)
	if err == nil && runtime.GOOS == "windows" { // spelled as stored (case, long names), as EvalSymlinks spells it
		real, err = filepath.EvalSymlinks(real)
	}
	return real, missing, err
}

// errMissing ends a host walk at a name that is not there (inside a root).
var errMissing = errors.New("missing")

// A view is what a walk looks at: the host (Resolve) or an os.Root (the
// link judge's resolver).
type view interface {
	// lookup says what name is in the real folder at (names below the
	// top): a link (with its target), a folder, or neither (0).
	lookup(at []string, name string) (fs.FileMode, string, error)
	// restart takes a link's target: when it is absolute, what of it to walk
	// from the top, or why not.
	restart(target string) (rest string, absolute bool, err error)
}

// endOfLink marks, among the names left to walk, where a link's target
// ends: the judge's floor is raised there.
const endOfLink = "\x00"

// walker resolves a path one name at a time as the kernel does: a link's
// target replaces it in place, and .. goes to the folder the walk is really
// in, never to the lexical parent. at are the real names reached below the
// view's top; rest is what is left, link targets spliced in.
type walker struct {
	view view
	at   []string
	rest []string
	// judge keeps the link judge's floor (see resolver): .. may not climb
	// back out of a link, a file or a name not there, which its view walks
	// on as a file. The host's view ends a walk at such a name (errMissing).
	judge      bool
	followLast bool // follow a link at the path's end too (a spliced target never ends it)
	floor      int
	links      int
}

// walk returns the names not there yet, from the first the view says is
// missing ("" when all are there).
func (w *walker) walk() (missing string, err error) {
	for len(w.rest) > 0 {
		name := w.rest[0]
		w.rest = w.rest[1:]
		switch name {
		case "", ".":
			continue
		case endOfLink:
			w.floor = len(w.at)
			continue
		case "..":
			if err := w.up(); err != nil {
				return "", err
			}
			continue
		}
		k, target, err := w.view.lookup(w.at, name)
		switch {
		case errors.Is(err, errMissing) && slices.Contains(w.rest, ".."): // out of a folder not there
			return "", errClimbs
		case errors.Is(err, errMissing):
			return filepath.Join(append([]string{name}, w.rest...)...), nil
		case err != nil:
			return "", err
		case k == fs.ModeSymlink && (w.followLast || len(w.rest) > 0):
			if err := w.follow(target); err != nil {
				return "", err
			}
		default:
			w.at = append(w.at, name)
			if w.judge && k != fs.ModeDir {
				w.floor = len(w.at)
			}
		}
	}
	return "", nil
}

func (w *walker) up() error {
	switch {
	case len(w.at) == 0 && w.judge:
		return errOutside
	case len(w.at) == 0: // the root's .. is the root
		return nil
	case len(w.at) <= w.floor:
		return errClimbs
	}
	w.at = w.at[:len(w.at)-1]
	return nil
}

// follow splices a link's target in front of what is left.
func (w *walker) follow(target string) error {
	if w.links++; w.links > maxLinks {
		return errLoop
	}
	rest, absolute, err := w.view.restart(target)
	if err != nil {
		return err
	}
	if absolute {
		w.at, w.floor = w.at[:0], 0
	}
	spliced := split(rest)
	if w.judge {
		spliced = append(spliced, endOfLink)
	}
	w.rest = append(spliced, w.rest...)
	return nil
}

// host is the host's view for Resolve: it looks only at what lies on the
// way to a root (anywhere: at everything), from a volume's root.
type host struct {
	roots    []string
	anywhere bool
	vol      string
}

func (h *host) resolve(path string, followLast bool) (real, missing string, err error) {
	if !filepath.IsAbs(path) {
		return "", "", errors.New("not an absolute path")
	}
	h.vol = filepath.VolumeName(path)
	// not cleaned: a/.. is where a leads, then up, as the kernel walks it
	w := walker{view: h, rest: split(path[len(h.vol):]), followLast: followLast}
	if missing, err = w.walk(); err != nil {
		return "", "", err
	}
	return h.path(w.at), missing, nil
}

func (h *host) path(at []string, name ...string) string {
	return h.vol + string(filepath.Separator) + filepath.Join(slices.Concat(at, name)...)
}

func (h *host) lookup(at []string, name string) (fs.FileMode, string, error) {
	next := h.path(at, name)
	info, err := os.Lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist) && h.within(next):
		return 0, "", errMissing
	case err != nil && h.within(h.path(at)):
		return 0, "", err // not a folder, no permission: inside a root, so it may be said
	case err != nil:
		return 0, "", ErrOutside
	case isLink(info):
		target, err := os.Readlink(next)
		if err != nil {
			return 0, "", ErrOutside
		}
		return fs.ModeSymlink, target, nil
	case !h.onTheWay(next):
		return 0, "", ErrOutside
	}
	return info.Mode().Type() & fs.ModeDir, "", nil
}

func (h *host) restart(target string) (string, bool, error) {
	if !filepath.IsAbs(target) {
		return target, false, nil
	}
	h.vol = filepath.VolumeName(target)
	if !h.onTheWay(h.path(nil)) { // another volume
		return "", true, ErrOutside
	}
	return target[len(h.vol):], true, nil
}

func (h *host) within(p string) bool { return h.anywhere || Within(p, h.roots) }

// onTheWay reports whether p is a root, below one, or holds one.
func (h *host) onTheWay(p string) bool {
	return h.within(p) || slices.ContainsFunc(h.roots, func(r string) bool { return Within(r, []string{p}) })
}

// isLink: a symlink, or on Windows a junction, which Lstat reports as
// irregular and Readlink reads.
func isLink(info fs.FileInfo) bool {
	return info.Mode()&fs.ModeSymlink != 0 || runtime.GOOS == "windows" && info.Mode()&fs.ModeIrregular != 0
}

// split cuts a path at every separator this host knows, never cleaning it:
// a/../b is three steps, since a may be a link.
func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r < 0x80 && os.IsPathSeparator(uint8(r)) })
}
