package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

func simTarget(t *testing.T) (*sandbox.Target, func(string) string) {
	t.Helper()
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n", "api")
	guest := func(p string) string { return s.Driver.(*sim.Driver).GuestPath(s.Instance(), p) }
	return s.Target(), guest
}

func codeOf(err error) string {
	var c *coded.Error
	if errors.As(err, &c) {
		return c.Code
	}
	return ""
}

func TestWriteThenReadAGuestFile(t *testing.T) {
	tgt, guest := simTarget(t)
	ctx := context.Background()
	mode := fs.FileMode(0o600)
	w, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/srv/app/config.txt", Data: []byte("hello\x00world\n"),
		Mode: &mode, MakeParents: true})
	if err != nil {
		t.Fatal(err)
	}
	if w.Bytes != 12 || w.Mode != "0600" {
		t.Errorf("write result = %+v", w)
	}
	// The sim keeps a guest path inside its guest folder, as its copies do.
	st, err := os.Stat(guest("/srv/app/config.txt"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("guest file: %v %v", st, err)
	}
	r, err := tgt.ReadFile(ctx, "/srv/app/config.txt", 0, 0)
	if err != nil || string(r.Data) != "hello\x00world\n" || r.Size != 12 || r.Truncated {
		t.Fatalf("read = %+v, %v", r, err)
	}
	r, err = tgt.ReadFile(ctx, "/srv/app/config.txt", 6, 3)
	if err != nil || string(r.Data) != "wor" || !r.Truncated || r.NextOffset != 9 {
		t.Fatalf("read from 6, 3 bytes = %+v, %v", r, err)
	}
	r, err = tgt.ReadFile(ctx, "/srv/app/config.txt", 100, 3)
	if err != nil || len(r.Data) != 0 || r.Truncated {
		t.Fatalf("read past the end = %+v, %v", r, err)
	}
}

func TestWriteKeepsTheModeAndLeavesNoTemporaryFile(t *testing.T) {
	tgt, guest := simTarget(t)
	ctx := context.Background()
	os.MkdirAll(guest("/d"), 0o755)
	os.WriteFile(guest("/d/run.sh"), []byte("old"), 0o750)
	w, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/d/run.sh", Data: []byte("#!/bin/sh\n")})
	if err != nil || w.Mode != "0750" {
		t.Fatalf("write = %+v, %v", w, err)
	}
	if b, _ := os.ReadFile(guest("/d/run.sh")); string(b) != "#!/bin/sh\n" {
		t.Errorf("content = %q", b)
	}
	if names, _ := os.ReadDir(guest("/d")); len(names) != 1 {
		t.Errorf("folder holds %v, want only run.sh", names)
	}
	w, err = tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/d/new.txt", Data: nil})
	if err != nil || w.Mode != "0644" || w.Bytes != 0 {
		t.Fatalf("new empty file = %+v, %v", w, err)
	}
}

func TestFileToolsSayWhatIsWrongWithAPath(t *testing.T) {
	tgt, guest := simTarget(t)
	ctx := context.Background()
	os.MkdirAll(guest("/dir/sub"), 0o755)
	os.WriteFile(guest("/dir/file"), []byte("x"), 0o644)
	for name, call := range map[string]struct {
		err  func() error
		code string
	}{
		"read missing": {func() error { _, err := tgt.ReadFile(ctx, "/nope", 0, 0); return err },
			sandbox.CodeGuestPathNotFound},
		"read folder": {func() error { _, err := tgt.ReadFile(ctx, "/dir", 0, 0); return err },
			sandbox.CodeGuestPathIsDirectory},
		"write over folder": {func() error {
			_, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/dir/sub", Data: []byte("x")})
			return err
		}, sandbox.CodeGuestPathIsDirectory},
		"write without parent": {func() error {
			_, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/a/b/c", Data: []byte("x")})
			return err
		}, sandbox.CodeGuestPathNotFound},
		"write below a file": {func() error {
			_, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "/dir/file/x", Data: []byte("x")})
			return err
		}, sandbox.CodeGuestPathNotDirectory},
		"list a file": {func() error { _, err := tgt.ListFiles(ctx, "/dir/file", false, 0); return err },
			sandbox.CodeGuestPathNotDirectory},
		"list missing": {func() error { _, err := tgt.ListFiles(ctx, "/gone", false, 0); return err },
			sandbox.CodeGuestPathNotFound},
		"remove non-empty": {func() error { _, err := tgt.RemovePath(ctx, "/dir", false); return err },
			sandbox.CodeGuestDirNotEmpty},
		"remove root": {func() error { _, err := tgt.RemovePath(ctx, "/", true); return err },
			coded.InvalidArguments},
		"mkdir over file": {func() error { _, err := tgt.MakeDir(ctx, "/dir/file", nil, true); return err },
			sandbox.CodeGuestPathExists},
		"mkdir without parent": {func() error { _, err := tgt.MakeDir(ctx, "/x/y", nil, false); return err },
			sandbox.CodeGuestPathNotFound},
		"NUL in path": {func() error { _, err := tgt.ReadFile(ctx, "a\x00b", 0, 0); return err },
			coded.InvalidArguments},
		"limit too big": {func() error { _, err := tgt.ReadFile(ctx, "/dir/file", 0, sandbox.MaxReadLimit+1); return err },
			coded.InvalidArguments},
	} {
		if got := codeOf(call.err()); got != call.code {
			t.Errorf("%s: code %q, want %q (%v)", name, got, call.code, call.err())
		}
	}
}

func TestListStatRemoveMakeDir(t *testing.T) {
	tgt, guest := simTarget(t)
	ctx := context.Background()
	if created, err := tgt.MakeDir(ctx, "/w/a/b", nil, true); err != nil || !created {
		t.Fatalf("make_dir = %v, %v", created, err)
	}
	if created, err := tgt.MakeDir(ctx, "/w/a/b", nil, true); err != nil || created {
		t.Fatalf("make_dir again = %v, %v", created, err)
	}
	os.WriteFile(guest("/w/a/b/f.txt"), []byte("12345"), 0o640)
	os.WriteFile(guest("/w/odd\nname 'q'"), nil, 0o644)
	os.Symlink("a/b/f.txt", guest("/w/link"))
	l, err := tgt.ListFiles(ctx, "/w", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(l.Entries); got != "a link odd\nname 'q'" || l.Truncated {
		t.Errorf("one level = %q (truncated %v)", got, l.Truncated)
	}
	l, err = tgt.ListFiles(ctx, "/w", true, 0)
	if err != nil || paths(l.Entries) != "a a/b a/b/f.txt link odd\nname 'q'" {
		t.Fatalf("recursive = %q, %v", paths(l.Entries), err)
	}
	if f := l.Entries[2]; f.Type != "file" || f.Size != 5 || f.Mode != "0640" || f.Modified.IsZero() {
		t.Errorf("file entry = %+v", f)
	}
	if l.Entries[3].Type != "symlink" || l.Entries[0].Type != "directory" {
		t.Errorf("types = %+v", l.Entries)
	}
	l, err = tgt.ListFiles(ctx, "/w", true, 2)
	if err != nil || len(l.Entries) != 2 || !l.Truncated {
		t.Fatalf("capped = %+v, %v", l, err)
	}
	e, ok, err := tgt.StatPath(ctx, "/w/link")
	if err != nil || !ok || e.Type != "symlink" || e.LinkTarget != "a/b/f.txt" || e.Path != "/w/link" {
		t.Fatalf("stat link = %+v %v %v", e, ok, err)
	}
	if _, ok, err := tgt.StatPath(ctx, "/w/none"); err != nil || ok {
		t.Fatalf("stat missing = %v %v", ok, err)
	}
	if existed, err := tgt.RemovePath(ctx, "/w/a", true); err != nil || !existed {
		t.Fatalf("remove = %v %v", existed, err)
	}
	if existed, err := tgt.RemovePath(ctx, "/w/a", true); err != nil || existed {
		t.Fatalf("remove again = %v %v", existed, err)
	}
	if _, err := os.Lstat(guest("/w/a")); !os.IsNotExist(err) {
		t.Errorf("/w/a still there: %v", err)
	}
}

func paths(es []sandbox.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return strings.Join(out, " ")
}

// A relative guest path is relative to where commands start: for the
// sim, its guest folder.
func TestRelativePathsAreWhereCommandsStart(t *testing.T) {
	tgt, guest := simTarget(t)
	ctx := context.Background()
	if _, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: "notes.txt", Data: []byte("n")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(guest("/"), "notes.txt")); err != nil || string(b) != "n" {
		t.Fatalf("%q %v", b, err)
	}
}
