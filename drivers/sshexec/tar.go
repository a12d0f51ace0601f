package sshexec

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/sandboxforge/sbf/internal/hostpath"
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
		rel, err := hostpath.Below(src, p)
		if err != nil {
			return err
		}
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
