package hostpath

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// UnpackOptions say what an unpack leaves out. The zero value unpacks
// everything the archive holds (still confined to the root): what a
// simulated guest's side of a copy does.
type UnpackOptions struct {
	// Guard, when set, skips entries that break its rules.
	Guard *Guard
	// LinksInside keeps only symlinks whose target resolves inside the
	// destination and is not protected; the others are skipped.
	LinksInside bool
	// RootAbs is the root's absolute, symlink-free path: with it, paths
	// are judged after following the links already in the root too.
	RootAbs string
}

// Report says what an unpack left out, so a caller can show it.
type Report struct {
	SkippedLinks []SkippedLink `json:"skipped_links,omitempty"`
	SkippedPaths []SkippedPath `json:"skipped_paths,omitempty"`
}

// SkippedLink is a symlink that would have led outside the destination.
type SkippedLink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// SkippedPath is an entry a protection rule refused.
type SkippedPath struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// Empty reports whether nothing was left out.
func (r Report) Empty() bool { return len(r.SkippedLinks) == 0 && len(r.SkippedPaths) == 0 }

// Unpack extracts an archive whose top entry is top into dst, a path below
// root (top is renamed to dst; with top "", every entry keeps its name
// under dst). Every write goes through root, so neither an entry name
// (.., absolute) nor a symlink already there or unpacked earlier leads
// outside it; symlinks are created last.
func Unpack(r io.Reader, root *os.Root, top, dst string, o UnpackOptions) (Report, error) {
	u := unpacker{root: root, dst: filepath.Clean(dst), o: o}
	tr := tar.NewReader(r)
	type link struct{ path, target string }
	var links []link
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return u.rep, fmt.Errorf("reading the archive: %w", err)
		}
		target, err := entryPath(hdr.Name, top, u.dst)
		if err != nil {
			return u.rep, err
		}
		if hdr.Typeflag != tar.TypeDir && hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeSymlink {
			continue // devices, fifos, hard links: nothing a copy needs
		}
		if u.protected(target) {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(root, target, tr, hdr.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			links = append(links, link{target, hdr.Linkname})
		}
		if err != nil {
			return u.rep, fmt.Errorf("extracting %s: %w", clipName(hdr.Name), err)
		}
	}
	for _, l := range links {
		if !u.linkAllowed(l.path, l.target) {
			continue
		}
		root.Remove(l.path)
		if err := root.Symlink(l.target, l.path); err != nil {
			return u.rep, fmt.Errorf("extracting the link %s: %w", l.path, err)
		}
	}
	return u.rep, nil
}

// entryPath maps an archive entry to its path below the root.
func entryPath(name, top, dst string) (string, error) {
	clean := path.Clean(name)
	rel, ok := strings.CutPrefix(clean, top)
	if top == "" { // every entry keeps its name
		rel, ok = "/"+clean, true
	}
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) || strings.Contains(clean, "..") || path.IsAbs(name) {
		return "", fmt.Errorf("refusing archive entry %q outside %q", clipName(name), top)
	}
	return filepath.Join(dst, filepath.FromSlash(rel)), nil
}

type unpacker struct {
	root *os.Root
	dst  string
	o    UnpackOptions
	rep  Report
	gone []string // protected folders skipped: what lies below them goes unreported
}

// protected reports (and records) an entry a rule refuses, judged by its
// path and by where the links already in the root lead it.
func (u *unpacker) protected(p string) bool {
	if u.o.Guard == nil {
		return false
	}
	for _, dir := range u.gone {
		if inside(dir, p) {
			return true
		}
	}
	for _, candidate := range []string{p, u.real(p)} {
		if r, ok := u.o.Guard.Rule(filepath.ToSlash(candidate)); ok {
			u.rep.SkippedPaths = append(u.rep.SkippedPaths, SkippedPath{Path: filepath.ToSlash(p), Rule: r.Pattern})
			u.gone = append(u.gone, p)
			return true
		}
	}
	return false
}

// linkAllowed keeps a symlink only when its target stays inside the
// destination, lexically and after the links already there, and is not
// protected: a link may not become a later write's way into .git.
func (u *unpacker) linkAllowed(p, target string) bool {
	if !u.o.LinksInside {
		return true
	}
	resolved := filepath.Join(filepath.Dir(p), filepath.FromSlash(target))
	ok := !filepath.IsAbs(target) && !path.IsAbs(target) && inside(u.dst, resolved) && inside(u.dst, u.real(resolved))
	if ok && u.o.Guard != nil {
		_, bad1 := u.o.Guard.Rule(filepath.ToSlash(resolved))
		_, bad2 := u.o.Guard.Rule(filepath.ToSlash(u.real(resolved)))
		ok = !bad1 && !bad2
	}
	if !ok {
		u.rep.SkippedLinks = append(u.rep.SkippedLinks, SkippedLink{Path: filepath.ToSlash(p), Target: clipName(target)})
	}
	return ok
}

// real is p (relative to the root) after following the symlinks on the
// way that already exist; p itself when the root's path is not known or
// the links lead out of the root (the root's own checks refuse those).
func (u *unpacker) real(p string) string {
	if u.o.RootAbs == "" {
		return p
	}
	abs, err := resolve(filepath.Join(u.o.RootAbs, p))
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(u.o.RootAbs, abs)
	if err != nil || !inside(".", rel) {
		return p
	}
	return rel
}

// inside reports whether p (relative, cleaned) is dir or below it.
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func writeFile(root *os.Root, p string, r io.Reader, perm fs.FileMode) error {
	if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// clipName bounds how much of a name from a guest a message repeats.
func clipName(s string) string { return coded.Clip(s) }
