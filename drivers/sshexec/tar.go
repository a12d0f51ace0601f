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

// writeTar archives src (file or folder) with its top entry named top.
func writeTar(w io.Writer, src, top string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		name := path.Join(top, filepath.ToSlash(rel))
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = name
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
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

// readTar extracts an archive whose top entry is top into dst (top is
// renamed to dst). Entries must stay under top; symlinks are created last
// so no entry is ever written through one.
func readTar(r io.Reader, top, dst string) error {
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
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) || strings.Contains(name, "..") {
			return fmt.Errorf("refusing archive entry %q outside %q", hdr.Name, top)
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, hdr.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			links = append(links, link{target, hdr.Linkname})
		}
	}
	for _, l := range links {
		os.Remove(l.path)
		if err := os.Symlink(l.target, l.path); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(p string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
