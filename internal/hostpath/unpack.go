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
	// RootAbs is the root's absolute, symlink-free path: with it, a link
	// already there may name a path below the root absolutely, and
	// Reserved places are found.
	RootAbs string
	// Reserved are host places no entry may land in (or, for a link, above).
	Reserved []Reserved
	// MaxBytes, when positive, is how much the unpack may write, counted as
	// the archive counts it (512 bytes for each entry, plus its content):
	// it stops before the entry that would pass it, keeping what it wrote.
	MaxBytes int64
}

// Report says what an unpack left out, so a caller can show it.
type Report struct {
	SkippedLinks []SkippedLink `json:"skipped_links,omitempty"`
	SkippedPaths []SkippedPath `json:"skipped_paths,omitempty"`
}

// SkippedLink is a symlink that would have led outside the destination
// (or into a protected path, or that could not be judged: Reason says).
type SkippedLink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	Reason string `json:"reason,omitempty"`
}

// SkippedPath is an entry a protection rule (or a reserved host place)
// refused.
type SkippedPath struct {
	Path   string `json:"path"`
	Rule   string `json:"rule"`
	Reason string `json:"reason,omitempty"`
}

// Empty reports whether nothing was left out.
func (r Report) Empty() bool { return len(r.SkippedLinks) == 0 && len(r.SkippedPaths) == 0 }

// Unpack extracts an archive whose top entry is top into dst, a path below
// root (top is renamed to dst; with top "", every entry keeps its name
// under dst). Every write goes through root, so neither an entry name
// (.., absolute) nor a symlink already there or unpacked earlier leads
// outside it; symlinks are created last, each judged where it will be
// among those made before it.
func Unpack(r io.Reader, root *os.Root, top, dst string, o UnpackOptions) (Report, error) {
	u := newUnpacker(root, dst, o)
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
		if u.unnamable(target) || u.refused(target, hdr.Typeflag == tar.TypeDir) {
			continue
		}
		if err := u.charge(target, hdr); err != nil {
			return u.rep, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(root, target, tr, hdr.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			links = append(links, link{target, hdr.Linkname})
			continue
		}
		if err != nil {
			return u.rep, fmt.Errorf("extracting %s: %w", clipName(hdr.Name), err)
		}
		u.wrote(target, hdr.Size)
	}
	for _, l := range links {
		if !u.linkAllowed(l.path, l.target) {
			continue
		}
		if err := makeLink(root, l.path, l.target); err != nil {
			return u.rep, fmt.Errorf("extracting the link %s: %w", clipName(filepath.ToSlash(l.path)), err)
		}
		u.wrote(l.path, 0)
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

// writeFile writes a file entry; a link where it goes is replaced, not
// written through (where it leads was not judged).
func writeFile(root *os.Root, p string, r io.Reader, perm fs.FileMode) error {
	if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if info, err := root.Lstat(p); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if err := root.Remove(p); err != nil {
			return err
		}
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
