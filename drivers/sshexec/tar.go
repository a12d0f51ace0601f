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
		name := path.Join(top, rel)
		if info.IsDir() {
			name += "/"
		}
		return AddToTar(tw, fsys, p, name, info)
	})
	if err != nil {
		return fmt.Errorf("archiving %s: %w", src, err)
	}
	return tw.Close()
}

// AddToTar archives p of fsys, described by info, as name: a symlink as
// a link (never followed), a regular file with its content.
func AddToTar(tw *tar.Writer, fsys fs.FS, p, name string, info fs.FileInfo) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = fs.ReadLink(fsys, p); err != nil {
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
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
