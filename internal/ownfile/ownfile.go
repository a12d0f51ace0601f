// Package ownfile opens sbf's own files: a workspace's state, journal,
// backup, history, managed overrides and locks (.sandboxforge/), and the
// state home's host index, ledger, locks and MCP tokens. They lie in a
// folder the operator named (a workspace root, the state home), yet what is
// in a workspace may have been committed by a repository or written by a
// guest through a writable mount. So below that folder sbf follows no link,
// the folder .sandboxforge included, opens nothing but regular files (a
// FIFO would hold the read, a device would never end it) and reads each
// file within a bound. Every open goes through an os.Root walked one name
// at a time, each name looked at before it is opened and compared with
// what was opened after, so a link swapped in meanwhile is refused too.
package ownfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Folder is a folder of sbf's own files: base, opened as the operator
// named it (links on the way to it are the operator's), then the folders
// below it that sbf makes, none of which may be a link.
type Folder struct {
	base string
	subs []sub
}

type sub struct {
	name string
	perm fs.FileMode // when sbf makes it
}

// At is the folder dir as the operator named it (the state home).
func At(dir string) Folder { return Folder{base: dir} }

// In is the folder name that sbf makes in parent (a workspace's
// .sandboxforge): parent as named, name never a link.
func In(parent, name string) Folder { return At(parent).Sub(name) }

// Sub is a folder sbf makes (mode 0755) in f.
func (f Folder) Sub(name string) Folder { return f.sub(name, 0o755) }

// Private is a folder sbf makes (mode 0700) in f, for what only its user
// may read.
func (f Folder) Private(name string) Folder { return f.sub(name, 0o700) }

func (f Folder) sub(name string, perm fs.FileMode) Folder {
	subs := append(append([]sub(nil), f.subs...), sub{name: name, perm: perm})
	return Folder{base: f.base, subs: subs}
}

// Path is the folder's path, for messages.
func (f Folder) Path() string {
	p := f.base
	for _, s := range f.subs {
		p = filepath.Join(p, s.name)
	}
	return p
}

// File is one of the folder's files.
func (f Folder) File(name string) File { return File{Dir: f, Name: name} }

// File is one of sbf's own files: a name in a Folder.
type File struct {
	Dir  Folder
	Name string
}

// PathFile is the file at path, in its folder as named: only the file
// itself is sbf's (a lock beside an operator's file).
func PathFile(path string) File { return At(filepath.Dir(path)).File(filepath.Base(path)) }

// Path is the file's path, for messages.
func (f File) Path() string { return filepath.Join(f.Dir.Path(), f.Name) }

// OpenFile opens the file (see Folder.OpenFile).
func (f File) OpenFile(flag int, perm fs.FileMode) (*os.File, error) {
	return f.Dir.OpenFile(f.Name, flag, perm)
}

// ReadFile reads the file (see Folder.ReadFile).
func (f File) ReadFile(limit int64) ([]byte, fs.FileInfo, error) {
	return f.Dir.ReadFile(f.Name, limit)
}

// root opens the folder, making the missing part of it when create is set.
func (f Folder) root(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(f.base, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", f.base, err)
		}
	}
	r, err := os.OpenRoot(f.base)
	if err != nil {
		return nil, err
	}
	shown := f.base
	for _, s := range f.subs {
		shown = filepath.Join(shown, s.name)
		next, err := enter(r, s, shown, create)
		r.Close()
		if err != nil {
			return nil, err
		}
		r = next
	}
	return r, nil
}

// enter opens the folder s in r, refusing a link or anything but a folder,
// and one swapped for another between the look and the open.
func enter(r *os.Root, s sub, shown string, create bool) (*os.Root, error) {
	info, err := r.Lstat(s.name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := r.Mkdir(s.name, s.perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating %s: %w", shown, err)
		}
		info, err = r.Lstat(s.name)
	}
	if err != nil {
		return nil, err
	}
	if err := check(info, shown, true); err != nil {
		return nil, err
	}
	next, err := r.OpenRoot(s.name)
	if err != nil {
		return nil, err
	}
	opened, err := next.Stat(".")
	if err == nil && !sameFile(info, opened) {
		err = refused(shown, problemLink)
	}
	if err != nil {
		next.Close()
		return nil, err
	}
	return next, nil
}

// Make creates the folder (and base) where missing; a link on the way is
// refused.
func (f Folder) Make() error {
	r, err := f.root(true)
	if err != nil {
		return err
	}
	return r.Close()
}

// Exists says whether the folder is there (and no link).
func (f Folder) Exists() (bool, error) {
	r, err := f.root(false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, r.Close()
}

// Stat describes the file without following a link: a link or anything
// but a regular file is refused (STATE_FILE_LINK, STATE_FILE_INVALID).
func (f Folder) Stat(name string) (fs.FileInfo, error) {
	r, err := f.root(false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	return info, check(info, filepath.Join(f.Path(), name), false)
}

// OpenFile opens a regular file of the folder (which must be there: Make
// makes it) with flag (os.O_*), never through a link and never blocking on
// a FIFO. A name that is a link, or becomes one while it is opened, is
// STATE_FILE_LINK; anything but a regular file is STATE_FILE_INVALID.
func (f Folder) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	r, err := f.root(false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return openIn(r, name, filepath.Join(f.Path(), name), flag, perm)
}

func openIn(r *os.Root, name, shown string, flag int, perm fs.FileMode) (*os.File, error) {
	// sbf replaces its files atomically (a new file renamed over the old)
	// and readers take no lock: another file under the name at the open
	// than at the look may be such a replacement, so the open is tried
	// again; a link is refused at the next look.
	for range replacedTries {
		fh, err := openOnce(r, name, shown, flag, perm)
		if !errors.Is(err, errReplaced) {
			return fh, err
		}
	}
	return nil, refused(shown, problemLink)
}

// replacedTries bounds the opens of a file replaced meanwhile each time.
const replacedTries = 8

// errReplaced is another file under the name at the open than at the look.
var errReplaced = errors.New("replaced while opened")

func openOnce(r *os.Root, name, shown string, flag int, perm fs.FileMode) (*os.File, error) {
	before, err := r.Lstat(name)
	switch {
	case err == nil:
		if err := check(before, shown, false); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0:
		return nil, err
	default:
		before = nil
	}
	fh, err := r.OpenFile(name, flag|nonBlock, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errReplaced // a link since the look: the next look says so
	}
	if err != nil {
		return nil, err
	}
	opened, err := fh.Stat()
	if err == nil {
		err = check(opened, shown, false)
	}
	if err == nil && before == nil { // made now, or by another process meanwhile: look again
		before, err = r.Lstat(name)
		if err == nil {
			err = check(before, shown, false)
		}
	}
	if err == nil && !sameFile(before, opened) {
		err = errReplaced
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}

// ReadFile reads a regular file of the folder whole, refusing one larger
// than limit (STATE_FILE_INVALID) without reading it; it returns what the
// file was when read.
func (f Folder) ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error) {
	fh, err := f.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	shown := filepath.Join(f.Path(), name)
	if info.Size() > limit {
		return nil, nil, tooLarge(shown, info.Size(), limit)
	}
	// Sized by the stat, as os.ReadFile does: io.ReadAll's doublings cost a
	// 515 KB state file a megabyte more to allocate (and to fault in).
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(fh, limit+1)); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", shown, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > limit { // it grew while read
		return nil, nil, tooLarge(shown, int64(len(data)), limit)
	}
	return data, info, nil
}

// Names lists the folder's entries (none when it is missing).
func (f Folder) Names() ([]string, error) {
	r, err := f.root(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// Rename moves a file of the folder to another name in it; a link at
// either name is moved or replaced itself, never followed.
func (f Folder) Rename(from, to string) error {
	r, err := f.root(false)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Rename(from, to)
}

// Remove removes a name of the folder (a link itself, never its target).
func (f Folder) Remove(name string) error {
	r, err := f.root(false)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(name)
}

// RemoveAll removes a name of the folder and what is below it, following
// no link.
func (f Folder) RemoveAll(name string) error {
	r, err := f.root(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	return r.RemoveAll(name)
}
