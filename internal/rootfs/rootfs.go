// Package rootfs reads a folder through an os.Root as a read-only
// billy.Filesystem, the interface go-git reads a repository through. The
// kernel resolves every path inside the root, links and ".." included, so
// no file outside it is reachable even through a link swapped in while
// the read runs; nothing can be created, changed or removed; only regular
// files and folders are opened (a FIFO or a device would block the reader
// or feed it without end); and once the context ends every call fails, so
// a read abandoned at its deadline winds down by itself.
package rootfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
)

// ErrNotRegular is an open of something that is neither a regular file
// nor a folder.
var ErrNotRegular = errors.New("neither a regular file nor a folder")

// FS is a read-only billy.Filesystem confined to an os.Root.
type FS struct {
	root *os.Root
	ctx  context.Context
	subs *subRoots
}

// subRoots are the roots Chroot opened, closed with the first FS.
type subRoots struct {
	mu    sync.Mutex
	roots []*os.Root
}

var _ billy.Filesystem = (*FS)(nil)

// New reads root until ctx ends. The caller keeps root and closes it
// after Close.
func New(ctx context.Context, root *os.Root) *FS {
	return &FS{root: root, ctx: ctx, subs: &subRoots{}}
}

// Close closes the roots Chroot opened (not the one given to New).
func (f *FS) Close() error {
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	var errs []error
	for _, r := range f.subs.roots {
		errs = append(errs, r.Close())
	}
	f.subs.roots = nil
	return errors.Join(errs...)
}

// Capabilities says the files can be read and sought, nothing more.
func (f *FS) Capabilities() billy.Capability {
	return billy.ReadCapability | billy.SeekCapability
}

func (f *FS) Open(name string) (billy.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens a regular file or a folder for reading; any flag that
// would write is refused.
func (f *FS) OpenFile(name string, flag int, _ os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND|os.O_EXCL) != 0 {
		return nil, readOnly("open", name)
	}
	h, err := f.openRead(name)
	if err != nil {
		return nil, err
	}
	return &file{f: h, name: name, ctx: f.ctx}, nil
}

func (f *FS) openRead(name string) (*os.File, error) {
	if err := f.alive("open", name); err != nil {
		return nil, err
	}
	return openRead(f.root, local(name))
}

// openRead opens without blocking (a FIFO opened for reading waits for a
// writer otherwise) and keeps the handle only for a regular file or a
// folder.
func openRead(root *os.Root, name string) (*os.File, error) {
	h, err := root.OpenFile(name, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, err
	}
	info, err := h.Stat()
	if err == nil && !info.Mode().IsRegular() && !info.IsDir() {
		err = &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// ReadFS is root as an fs.FS that, like FS, opens only regular files and
// folders and never waits on a FIFO.
func ReadFS(root *os.Root) fs.FS { return readFS{root} }

type readFS struct{ root *os.Root }

func (r readFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	h, err := openRead(r.root, name)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (f *FS) Stat(name string) (os.FileInfo, error) {
	if err := f.alive("stat", name); err != nil {
		return nil, err
	}
	return f.root.Stat(local(name))
}

func (f *FS) Lstat(name string) (os.FileInfo, error) {
	if err := f.alive("lstat", name); err != nil {
		return nil, err
	}
	return f.root.Lstat(local(name))
}

func (f *FS) Readlink(name string) (string, error) {
	if err := f.alive("readlink", name); err != nil {
		return "", err
	}
	return f.root.Readlink(local(name))
}

// ReadDir lists a folder sorted by name, as os.ReadDir does; the entries
// describe links themselves, not what they point at.
func (f *FS) ReadDir(name string) ([]os.FileInfo, error) {
	h, err := f.openRead(name)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	infos, err := h.Readdir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(infos, func(a, b os.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return infos, nil
}

// Chroot opens a folder inside this root as a root of its own.
func (f *FS) Chroot(name string) (billy.Filesystem, error) {
	if err := f.alive("chroot", name); err != nil {
		return nil, err
	}
	sub, err := f.root.OpenRoot(local(name))
	if err != nil {
		return nil, err
	}
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	f.subs.roots = append(f.subs.roots, sub)
	return &FS{root: sub, ctx: f.ctx, subs: f.subs}, nil
}

func (f *FS) Root() string { return f.root.Name() }

func (f *FS) Join(elem ...string) string { return filepath.Join(elem...) }

func (f *FS) Create(name string) (billy.File, error)     { return nil, readOnly("create", name) }
func (f *FS) Rename(from, _ string) error                { return readOnly("rename", from) }
func (f *FS) Remove(name string) error                   { return readOnly("remove", name) }
func (f *FS) MkdirAll(name string, _ os.FileMode) error  { return readOnly("mkdir", name) }
func (f *FS) Symlink(_, link string) error               { return readOnly("symlink", link) }
func (f *FS) TempFile(dir, _ string) (billy.File, error) { return nil, readOnly("create", dir) }

func (f *FS) alive(op, name string) error {
	if err := f.ctx.Err(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// local is a billy name as an os.Root takes it: the root itself is ".".
func local(name string) string {
	if name == "" {
		return "."
	}
	return name
}

func readOnly(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: billy.ErrReadOnly}
}

// file is an open file that reads only while the context lasts.
type file struct {
	f    *os.File
	name string
	ctx  context.Context
}

var _ billy.File = (*file)(nil)

// Name is the name the file was opened by, as billy's own filesystems
// answer (go-git stats the file again by it).
func (h *file) Name() string { return h.name }

func (h *file) Read(p []byte) (int, error) {
	if err := h.ctx.Err(); err != nil {
		return 0, err
	}
	return h.f.Read(p)
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	if err := h.ctx.Err(); err != nil {
		return 0, err
	}
	return h.f.ReadAt(p, off)
}

func (h *file) Seek(off int64, whence int) (int64, error) { return h.f.Seek(off, whence) }
func (h *file) Stat() (os.FileInfo, error)                { return h.f.Stat() }
func (h *file) Close() error                              { return h.f.Close() }
func (h *file) Write([]byte) (int, error)                 { return 0, readOnly("write", h.name) }
func (h *file) Truncate(int64) error                      { return readOnly("truncate", h.name) }

// Lock and Unlock succeed: a reader that writes nothing needs no lock.
func (h *file) Lock() error   { return nil }
func (h *file) Unlock() error { return nil }
