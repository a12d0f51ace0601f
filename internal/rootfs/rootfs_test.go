package rootfs

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-billy/v5"

	"github.com/sandboxforge/sbf/internal/testutil"
)

func newFS(t *testing.T, ctx context.Context) (*FS, string, string) {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	testutil.WriteFile(t, filepath.Join(outside, "secret"), "canary")
	testutil.WriteFile(t, filepath.Join(dir, "sub", "in.txt"), "inside")
	for link, target := range map[string]string{"out": outside, "abs": filepath.Join(outside, "secret"),
		"sub/up": "../../" + filepath.Base(outside) + "/secret", "in": "sub/in.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := New(ctx, root)
	t.Cleanup(func() { f.Close(); root.Close() })
	return f, dir, outside
}

func TestNothingOutsideTheRootIsRead(t *testing.T) {
	f, _, outside := newFS(t, context.Background())
	for _, name := range []string{"out/secret", "abs", "sub/up", "../" + filepath.Base(outside) + "/secret",
		filepath.Join(outside, "secret")} {
		if h, err := f.Open(name); err == nil {
			data, _ := io.ReadAll(h)
			t.Errorf("Open(%s) read %q", name, data)
		}
		if _, err := f.Stat(name); err == nil {
			t.Errorf("Stat(%s) reached outside", name)
		}
	}
	sub, err := f.Chroot("sub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Open("../in"); err == nil {
		t.Error("a chroot reached its parent")
	}
	h, err := f.Open("in")
	if err != nil {
		t.Fatalf("a link inside the root: %v", err)
	}
	if data, _ := io.ReadAll(h); string(data) != "inside" || h.Name() != "in" {
		t.Errorf("read %q as %s", data, h.Name())
	}
	if info, err := f.Lstat("in"); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat(in) = %v, %v", info, err)
	}
	if target, err := f.Readlink("in"); err != nil || target != "sub/in.txt" {
		t.Errorf("Readlink(in) = %q, %v", target, err)
	}
}

func TestNothingIsWritten(t *testing.T) {
	f, dir, _ := newFS(t, context.Background())
	calls := map[string]func() error{
		"create":   func() error { _, err := f.Create("new"); return err },
		"openfile": func() error { _, err := f.OpenFile("sub/in.txt", os.O_RDWR, 0); return err },
		"truncate": func() error { _, err := f.OpenFile("sub/in.txt", os.O_TRUNC, 0); return err },
		"rename":   func() error { return f.Rename("sub/in.txt", "moved") },
		"remove":   func() error { return f.Remove("sub/in.txt") },
		"mkdir":    func() error { return f.MkdirAll("made", 0o755) },
		"symlink":  func() error { return f.Symlink("sub", "made") },
		"tempfile": func() error { _, err := f.TempFile("sub", "x"); return err },
		"write": func() error {
			h, err := f.Open("sub/in.txt")
			if err != nil {
				return nil
			}
			defer h.Close()
			_, err = h.Write([]byte("x"))
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, billy.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("the folder changed: %v", entries)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "sub", "in.txt")); string(data) != "inside" {
		t.Errorf("in.txt = %q", data)
	}
}

func TestEveryCallFailsOnceTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f, _, _ := newFS(t, ctx)
	h, err := f.Open("sub/in.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cancel()
	if _, err := h.Read(make([]byte, 4)); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after the end: %v", err)
	}
	if _, err := f.Open("sub/in.txt"); !errors.Is(err, context.Canceled) {
		t.Errorf("Open after the end: %v", err)
	}
	if _, err := f.ReadDir("sub"); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadDir after the end: %v", err)
	}
	if _, err := f.Lstat("sub"); !errors.Is(err, context.Canceled) {
		t.Errorf("Lstat after the end: %v", err)
	}
}
