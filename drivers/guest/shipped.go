package guest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/rootfs"
)

// ShippedEntry is one file or folder a compose bundle ships.
type ShippedEntry struct {
	Name    string      // slash path relative to the project folder
	Mode    fs.FileMode // type and permissions; a link inside a folder is not shipped
	Content io.Reader   // a regular file's bytes, nil for anything else
}

// WalkShipped visits a path a compose file names (rel, relative to the
// project folder dir) and, when it is a folder, everything in it, in
// lexical order. Everything is read through an os.Root of the workspace
// root: the path's own components may be links, followed as compose
// follows them when it stays inside the workspace, and a path that leads
// out of it is HOST_PATH_DENIED naming rel, whether or not its target
// exists. Inside a folder, links are not followed (following reads a
// folder twice or forever through `a -> .`, and Docker's own build
// context keeps a link as a link) and neither are FIFOs or devices.
func WalkShipped(root, dir, rel string, visit func(ShippedEntry) error) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("opening the workspace %s: %w", root, err)
	}
	defer r.Close()
	base, err := filepath.Rel(root, dir)
	if err != nil || !filepath.IsLocal(base) && base != "." {
		return outside(rel, fmt.Errorf("the project folder %s is outside the workspace %s", dir, root))
	}
	start := path.Join(filepath.ToSlash(base), filepath.ToSlash(rel))
	if !filepath.IsLocal(rel) || !fs.ValidPath(start) {
		return outside(rel, errors.New("not a path inside the project folder"))
	}
	fsys := rootfs.ReadFS(r)
	if _, err := fs.Stat(fsys, start); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		return outside(rel, err)
	}
	return fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		name, _ := filepath.Rel(filepath.FromSlash(base), filepath.FromSlash(p))
		e := ShippedEntry{Name: filepath.ToSlash(name), Mode: d.Type()}
		if !d.Type().IsRegular() {
			return visit(e)
		}
		f, err := fsys.Open(p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", e.Name, err)
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		e.Mode, e.Content = info.Mode(), f
		return visit(e)
	})
}

// outside is a compose path that cannot be read inside the workspace.
func outside(rel string, err error) error {
	return coded.New(hostpath.Denied, map[string]any{"path": coded.Clip(rel)},
		"%s cannot be shipped: it does not stay inside the workspace (sbf ships only files inside it): %s",
		coded.Clip(rel), coded.Clip(err.Error()))
}
