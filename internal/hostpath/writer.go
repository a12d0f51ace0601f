package hostpath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Writer is the one way data that came from a guest reaches this host:
// rooted at an allowed folder (the workspace, or a folder the operator
// allowed), it refuses protected destinations, skips protected entries
// and links that lead out, and never writes through a link it did not
// judge.
type Writer struct {
	place Place
	guard Guard
}

// Writer confines dest (relative paths against base) and refuses it when
// a protection rule covers it, before anything is written.
func (p Policy) Writer(base, dest string, g Guard) (*Writer, error) {
	place, err := p.confineLeaf(base, dest)
	if err != nil {
		return nil, err
	}
	w := &Writer{place: place, guard: g}
	for _, rel := range []string{place.Rel, w.real(place.Rel)} {
		if err := g.Check(filepath.ToSlash(rel), clipName(dest)); err != nil {
			place.Close()
			return nil, err
		}
	}
	return w, nil
}

// confineLeaf confines dest's folder and keeps its last element as it is,
// so a link there is judged by the writer (refused for a file, followed
// inside the root for a folder) rather than resolved away beforehand.
func (p Policy) confineLeaf(base, dest string) (Place, error) {
	abs := dest
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, dest)
	}
	abs = filepath.Clean(abs)
	leaf := filepath.Base(abs)
	if info, err := os.Lstat(abs); err == nil && info.Mode()&fs.ModeSymlink == 0 || filepath.Dir(abs) == abs {
		return p.Confine(base, dest)
	}
	place, err := p.Confine(filepath.Dir(abs), ".")
	if ce := (*coded.Error)(nil); errors.As(err, &ce) && ce.Code == Denied {
		return Place{}, p.denied(dest) // as the other branch says it: no word on what is there
	}
	if err != nil {
		return Place{}, err
	}
	place.Rel, place.Abs = filepath.Join(place.Rel, leaf), filepath.Join(place.Abs, leaf)
	return place, nil
}

// Close releases the writer's root.
func (w *Writer) Close() error { return w.place.Close() }

// Abs is the destination's absolute path, for messages and results.
func (w *Writer) Abs() string { return w.place.Abs }

// Rel is the destination below the writer's root.
func (w *Writer) Rel() string { return w.place.Rel }

// Root is the folder the writer is confined to.
func (w *Writer) Root() *os.Root { return w.place.Root }

// Extract unpacks an archive whose top entry is top into the destination.
func (w *Writer) Extract(r io.Reader, top string) (Report, error) {
	if dir := filepath.Dir(w.place.Rel); dir != "." {
		if err := w.place.Root.MkdirAll(dir, 0o755); err != nil {
			return Report{}, err
		}
	}
	return Unpack(r, w.place.Root, top, w.place.Rel,
		UnpackOptions{Guard: &w.guard, LinksInside: true, RootAbs: w.place.RootAbs})
}

// ErrLink is a destination file that is a symbolic link: sbf neither reads
// nor writes through it, since whoever made it chose where it leads.
var ErrLink = errors.New("is a symbolic link; sbf does not read or write through links here")

// ReadFile reads the destination file (nil when it does not exist) and its
// permissions.
func (w *Writer) ReadFile() ([]byte, fs.FileMode, error) {
	info, err := w.place.Root.Lstat(w.place.Rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil, 0, fmt.Errorf("%s %w", w.place.Abs, ErrLink)
	}
	data, err := w.place.Root.ReadFile(w.place.Rel)
	return data, info.Mode().Perm(), err
}

// WriteFile replaces the destination file atomically: a temporary file in
// the same folder, synced, renamed over it. A link there is refused.
func (w *Writer) WriteFile(data []byte, perm fs.FileMode) (err error) {
	root, rel := w.place.Root, w.place.Rel
	if info, err := root.Lstat(rel); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s %w", w.place.Abs, ErrLink)
	}
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+".sbf-tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) { // left by a crash: ours to replace
		root.Remove(tmp)
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(tmp, perm)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.place.Abs, err)
	}
	if err = root.Rename(tmp, rel); err != nil {
		return fmt.Errorf("replacing %s: %w", w.place.Abs, err)
	}
	return nil
}

// real is rel after the links already in the root.
func (w *Writer) real(rel string) string {
	u := unpacker{o: UnpackOptions{RootAbs: w.place.RootAbs}}
	return u.real(rel)
}
