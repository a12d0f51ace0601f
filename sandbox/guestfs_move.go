package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// Moving and copying guest paths. Inside one sandbox both are the guest's
// own mv and cp; between two sandboxes the data goes through the host as
// a tar stream, which the host holds no more of than a pipe's worth and
// stops at the operator's copy ceiling.

// Relocation is a move or copy from Src to Dst.
type Relocation struct {
	Src, Dst string
	// Overwrite replaces what is at Dst (a folder with everything in it);
	// without it an existing Dst is GUEST_PATH_EXISTS.
	Overwrite bool
	// MakeParents creates Dst's missing parent folders.
	MakeParents bool
}

func (r Relocation) check(tool string) error {
	if err := CheckGuestPath("src", r.Src); err != nil {
		return err
	}
	if err := CheckGuestPath("dst", r.Dst); err != nil {
		return err
	}
	for field, p := range map[string]string{"src": r.Src, "dst": r.Dst} {
		switch path.Clean(p) {
		case "/", ".", "..":
			return coded.New(coded.InvalidArguments, map[string]any{"field": field},
				"refusing to %s %q: it is the guest's root or the home folder", tool, p)
		}
	}
	return nil
}

// prepareDst is the script lines that make room at $d, or stop with the
// file tools' exit statuses.
func (r Relocation) prepareDst() string {
	exists := `exit 10`
	if r.Overwrite {
		exists = `rm -rf -- "$d" || exit 6`
	}
	parents := `[ -e "$p" ] && exit 5; exit 3`
	if r.MakeParents {
		parents = `mkdir -p -- "$p" || exit 6`
	}
	return `[ -d "$p" ] || { ` + parents + `; }
if [ -e "$d" ] || [ -L "$d" ]; then ` + exists + `; fi
`
}

// MovePath renames a guest file, link or folder (mv: in place on one
// filesystem, copied and removed across two).
func (t *Target) MovePath(ctx context.Context, r Relocation) error {
	return t.relocate(ctx, "move_path", r, `mv -f -- "$s" "$d" || exit 6`)
}

// CopyPath copies a guest file, link or folder inside the sandbox, keeping
// modes, times and links as links.
func (t *Target) CopyPath(ctx context.Context, r Relocation) error {
	return t.relocate(ctx, "copy_path", r, `cp -PRp -- "$s" "$d" || exit 6`)
}

func (t *Target) relocate(ctx context.Context, tool string, r Relocation, do string) error {
	if err := r.check(tool); err != nil {
		return err
	}
	src, err := t.mapPath(r.Src)
	if err != nil {
		return err
	}
	dst, err := t.mapPath(r.Dst)
	if err != nil {
		return err
	}
	_, err = t.runFS(ctx, fsScript{tool: tool, path: r.Src,
		vars: [][2]string{{"s", src}, {"d", dst}, {"p", path.Dir(dst)}},
		body: `[ -e "$s" ] || [ -L "$s" ] || exit 3
` + r.prepareDst() + do})
	return destExists(err, tool, r.Dst)
}

// destExists words exit 10 (the destination is taken) for a move or copy.
func destExists(err error, tool, dst string) error {
	var c *coded.Error
	if errors.As(err, &c) && c.Code == CodeGuestPathExists {
		c.Details["path"] = dst
		c.Message = fmt.Sprintf("%s: %s exists in the guest; pass overwrite to replace it", tool, coded.Clip(dst))
	}
	return err
}

// PathExists says whether anything (a dangling link too) is at a guest
// path, and what: file, directory, symlink or other.
func (t *Target) PathExists(ctx context.Context, p string) (exists bool, kind string, err error) {
	e, ok, err := t.StatPath(ctx, p)
	return ok, e.Type, err
}

// CopyBetween copies a guest path of src to a path of dst (another
// sandbox): src's archive of it is unpacked in a fresh folder beside the
// destination, which is then moved into place, so a copy that fails or
// passes maxBytes (of archive) leaves nothing at the destination.
func CopyBetween(ctx context.Context, src *Target, dst *Target, r Relocation, maxBytes int64) (int64, error) {
	if err := r.check("copy_path"); err != nil {
		return 0, err
	}
	from, err := src.archiver()
	if err != nil {
		return 0, err
	}
	to, err := dst.archiver()
	if err != nil {
		return 0, err
	}
	if _, ok, err := src.StatPath(ctx, r.Src); err != nil || !ok {
		if err == nil {
			err = coded.New(CodeGuestPathNotFound, map[string]any{"path": r.Src, "sandbox": src.Sandbox},
				"copy_path %s: %s", coded.Clip(r.Src), describe(CodeGuestPathNotFound))
		}
		return 0, err
	}
	b := make([]byte, 6)
	rand.Read(b)
	tmp := path.Join(path.Dir(r.Dst), ".sbf-copy-"+hex.EncodeToString(b))
	mapped, err := dst.mapPath(r.Dst)
	if err != nil {
		return 0, err
	}
	mappedTmp, err := dst.mapPath(tmp)
	if err != nil {
		return 0, err
	}
	vars := [][2]string{{"d", mapped}, {"p", path.Dir(mapped)}, {"t", mappedTmp}}
	if _, err := dst.runFS(ctx, fsScript{tool: "copy_path", path: r.Dst, vars: vars,
		body: r.prepareDst() + `mkdir -- "$t" || exit 6`}); err != nil {
		return 0, destExists(err, "copy_path", r.Dst)
	}
	cleanup := func() {
		dst.runFS(context.WithoutCancel(ctx), fsScript{tool: "copy_path", path: r.Dst, vars: vars,
			body: `rm -rf -- "$t"`})
	}
	n, err := streamArchive(ctx, from, src.Instance, r.Src, to, dst.Instance, tmp, maxBytes)
	if err != nil {
		cleanup()
		return n, err
	}
	vars = append(vars, [2]string{"e", path.Join(mappedTmp, path.Base(path.Clean(r.Src)))})
	_, err = dst.runFS(ctx, fsScript{tool: "copy_path", path: r.Dst, vars: vars,
		body: r.prepareDst() + `mv -f -- "$e" "$d" || exit 6
rm -rf -- "$t"`})
	if err != nil {
		cleanup()
	}
	return n, destExists(err, "copy_path", r.Dst)
}

// streamArchive pipes one guest's archive of p into another guest's dir,
// stopping both when it passes maxBytes.
func streamArchive(ctx context.Context, from archiveGetter, fromInstance, p string, to archivePutter,
	toInstance, dir string, maxBytes int64) (int64, error) {
	if maxBytes <= 0 {
		maxBytes = hostpath.DefaultMaxCopyBytes
	}
	pr, pw := io.Pipe()
	got := make(chan error, 1)
	go func() {
		err := from.GetArchive(ctx, fromInstance, p, pw)
		pw.CloseWithError(err)
		got <- err
	}()
	lr := &ceilingReader{r: pr, max: maxBytes}
	err := to.PutArchive(ctx, toInstance, dir, lr)
	pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
	gerr := <-got
	switch {
	case lr.over:
		return lr.n, coded.New(hostpath.CopyLimit, map[string]any{"max_copy_bytes": maxBytes, "path": p},
			"copy_path stopped: %s is more than %d bytes of archive, the ceiling on one copy between sandboxes; "+
				"copy a smaller folder or ask the operator to raise [policy] max_copy_bytes", coded.Clip(p), maxBytes)
	case gerr != nil && !errors.Is(gerr, io.ErrClosedPipe):
		return lr.n, fmt.Errorf("copy_path: reading %s: %w", coded.Clip(p), gerr)
	}
	return lr.n, err
}

type archiveGetter interface {
	GetArchive(ctx context.Context, instance, path string, archive io.Writer) error
}

type archivePutter interface {
	PutArchive(ctx context.Context, instance, dir string, archive io.Reader) error
}

// ceilingReader ends the stream with an error once more than max bytes
// passed through it.
type ceilingReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *ceilingReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errCopyCeiling
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return 0, errCopyCeiling
	}
	return n, err
}

var errCopyCeiling = errors.New("the copy passed its ceiling")
