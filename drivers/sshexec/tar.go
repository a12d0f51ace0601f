package sshexec

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// WriteTar archives src (file or folder) with its top entry named top.
func WriteTar(w io.Writer, src, top string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(filepath.Dir(abs))
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteTarRoot(w, root, filepath.Base(abs), top)
}

// WriteTarRoot archives src of root (slash-separated; file or folder) with
// its top entry named top. Symlinks are archived as links, never followed;
// nothing outside the root is read. Names are the filesystem's bytes, as
// tar keeps them: a name that is not UTF-8 (which io/fs cannot open) is
// archived like any other, and the reader decides what to do with it.
func WriteTarRoot(w io.Writer, root *os.Root, src, top string) error {
	tw := tar.NewWriter(w)
	src = path.Clean(src)
	err := WalkRoot(root, src, func(p string, info fs.FileInfo) error {
		rel, _ := strings.CutPrefix(p, src)
		name := path.Join(top, strings.TrimPrefix(rel, "/"))
		if src == "." {
			name = path.Join(top, p)
		}
		if info.IsDir() {
			name += "/"
		}
		return AddToTar(tw, root, p, name, info)
	})
	if err != nil {
		return fmt.Errorf("archiving %s: %w", src, err)
	}
	return tw.Close()
}

// WalkRoot calls fn for p of root and, for a folder, everything below it,
// in name order, never following a link; fn returning fs.SkipDir for a
// folder skips what lies below it. Unlike fs.WalkDir it reaches names that
// are not UTF-8, which a guest can make.
func WalkRoot(root *os.Root, p string, fn func(p string, info fs.FileInfo) error) error {
	info, err := root.Lstat(p)
	if err != nil {
		return err
	}
	if err := fn(p, info); err != nil || !info.IsDir() {
		if errors.Is(err, fs.SkipDir) {
			return nil
		}
		return err
	}
	dir, err := root.Open(p)
	if err != nil {
		return err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		if err := WalkRoot(root, path.Join(p, n), fn); err != nil {
			return err
		}
	}
	return nil
}

// AddToTar archives p of root, described by info, as name: a symlink as
// a link (never followed), a regular file with its content.
func AddToTar(tw *tar.Writer, root *os.Root, p, name string, info fs.FileInfo) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = root.Readlink(p); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := root.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
