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
	"strings"
)

// WriteTar archives src (file or folder) with its top entry named top.
func WriteTar(w io.Writer, src, top string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	return WriteTarFS(w, os.DirFS(filepath.Dir(abs)), filepath.Base(abs), top)
}

// WriteTarFS archives src of fsys (file or folder) with its top entry
// named top. Symlinks are archived as links, never followed; given an
// os.Root's FS, nothing outside the root is read.
func WriteTarFS(w io.Writer, fsys fs.FS, src, top string) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = fs.ReadLink(fsys, p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = path.Join(top, rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := fsys.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archiving %s: %w", src, err)
	}
	return tw.Close()
}

// ReadTar extracts an archive whose top entry is top into dst (top is
// renamed to dst), confined to dst's folder: see ReadTarIn.
func ReadTar(r io.Reader, top, dst string) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return fmt.Errorf("opening %s: %w", parent, err)
	}
	defer root.Close()
	return ReadTarIn(r, root, top, filepath.Base(dst))
}

// ReadTarIn extracts an archive whose top entry is top into dst, a path
// below root (with top "", every entry keeps its name under dst). Every write goes through root, so neither an entry name (..,
// absolute) nor a symlink already there or unpacked earlier can lead
// outside it; symlinks are created last.
func ReadTarIn(r io.Reader, root *os.Root, top, dst string) error {
	tr := tar.NewReader(r)
	type link struct{ path, target string }
	var links []link
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name := path.Clean(hdr.Name)
		rel, ok := strings.CutPrefix(name, top)
		if top == "" { // every entry keeps its name
			rel, ok = "/"+name, true
		}
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) || strings.Contains(name, "..") || path.IsAbs(hdr.Name) {
			return fmt.Errorf("refusing archive entry %q outside %q", hdr.Name, top)
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(root, target, tr, hdr.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			links = append(links, link{target, hdr.Linkname})
		}
		if err != nil {
			return fmt.Errorf("extracting %s: %w", hdr.Name, err)
		}
	}
	for _, l := range links {
		root.Remove(l.path)
		if err := root.Symlink(l.target, l.path); err != nil {
			return fmt.Errorf("extracting the link %s: %w", l.path, err)
		}
	}
	return nil
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
