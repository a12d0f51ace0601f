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
	place    Place
	guard    Guard
	reserved []Reserved
	maxBytes int64
}

// Writer confines dest (relative paths against base) and refuses it when
// a protection rule or a reserved host place covers it, as named or where
// the links on its way lead, before anything is written.
func (p Policy) Writer(base, dest string, g Guard) (*Writer, error) {
	// A link at dest's end is kept as it is, to be judged by the writer
	// (refused for a file, followed inside the root for a folder) rather
	// than resolved away beforehand.
	place, err := p.confine(rawAbs(base, dest), dest, false)
	if err != nil {
		return nil, err
	}
	g.OutsideWorkspace = g.OutsideWorkspace || !p.inWorkspace(place)
	w := &Writer{place: place, guard: g, reserved: p.Reserved.List(), maxBytes: maxCopy(p.MaxCopyBytes)}
	if err := w.check(clipName(dest)); err != nil {
		place.Close()
		return nil, err
	}
	return w, nil
}

// inWorkspace reports whether place is under the workspace, the policy's
// first root.
func (p Policy) inWorkspace(place Place) bool {
	if len(p.Roots) == 0 {
		return false
	}
	ws, err := Real(p.Roots[0])
	return err == nil && ws == place.RootAbs
}

// check refuses a destination that is protected, as named below the root
// or after the links there (a link at its end included: a folder copy
// goes where it leads).
func (w *Writer) check(shown string) error {
	rels := []string{filepath.ToSlash(w.place.Rel)}
	rv := resolver{root: w.place.Root, rootAbs: w.place.RootAbs}
	if real, err := rv.resolve(rels[0], true); err == nil {
		rels = append(rels, real)
	}
	for _, rel := range rels {
		if err := w.guard.Check(rel, shown); err != nil {
			return err
		}
		if r, bad := reservedAt(w.reserved, filepath.Join(w.place.RootAbs, filepath.FromSlash(rel))); bad {
			return coded.New(Denied, map[string]any{"path": shown, "rule": r.Path, "reason": r.Why},
				"%s is protected from what a sandbox writes (%s: %s)", shown, r.Path, r.Why)
		}
	}
	return nil
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
	return Unpack(r, w.place.Root, top, w.place.Rel, UnpackOptions{Guard: &w.guard, LinksInside: true,
		RootAbs: w.place.RootAbs, Reserved: w.reserved, MaxBytes: w.maxBytes})
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
// the same folder, synced, renamed over it. A link there is refused, and
// so is more data than the copy ceiling.
func (w *Writer) WriteFile(data []byte, perm fs.FileMode) (err error) {
	root, rel := w.place.Root, w.place.Rel
	if int64(len(data)) > w.maxBytes {
		return tooLarge(w.maxBytes, filepath.ToSlash(rel), written{})
	}
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
