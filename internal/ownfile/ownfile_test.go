//go:build unix

package ownfile

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// world is a workspace and, beside it, a folder whose content no use of
// sbf's own files may change.
type world struct {
	t              *testing.T
	ws, outside    string
	outsideContent map[string]string
}

func newWorld(t *testing.T) *world {
	base := t.TempDir()
	w := &world{t: t, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.ws, w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.outside, "secret"), []byte("TOKEN=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.outsideContent = w.look()
	t.Cleanup(func() {
		if got := w.look(); !maps.Equal(got, w.outsideContent) {
			t.Errorf("outside changed: %v, was %v", got, w.outsideContent)
		}
	})
	return w
}

func (w *world) look() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(w.outside)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(w.outside, e.Name()))
		out[e.Name()] = string(data)
	}
	return out
}

func (w *world) link(target, at string) {
	w.t.Helper()
	p := filepath.Join(w.ws, at)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
}

func codeOf(err error) string {
	if c := coded.Of(err, ""); c != nil {
		return c.Code
	}
	return ""
}

// Every way in to a file of sbf's: the folder, the file, a create, a
// write, a rename's look.
func uses(f Folder, name string) map[string]error {
	out := map[string]error{}
	_, _, out["read"] = f.ReadFile(name, 1<<20)
	if fh, err := f.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		fh.Write([]byte("appended\n"))
		fh.Close()
	} else {
		out["append"] = err
	}
	_, out["stat"] = f.Stat(name)
	return out
}

func TestALinkedFolderIsRefusedForEveryUse(t *testing.T) {
	w := newWorld(t)
	w.link(w.outside, ".sandboxforge")
	own := In(w.ws, ".sandboxforge")
	for use, err := range uses(own, "secret") {
		if codeOf(err) != coded.StateFileLink || !strings.Contains(err.Error(), filepath.Join(w.ws, ".sandboxforge")) {
			t.Errorf("%s: %v", use, err)
		}
	}
	for what, err := range map[string]error{
		"make":  own.Make(),
		"write": own.WriteFile("state.json", []byte("{}"), 0o644),
		"new":   own.WriteNew(".gitignore", []byte("*\n"), 0o644),
		"sub":   own.Sub("locks").Make(),
	} {
		if codeOf(err) != coded.StateFileLink {
			t.Errorf("%s: %v", what, err)
		}
	}
	if ok, err := own.Exists(); ok || codeOf(err) != coded.StateFileLink {
		t.Errorf("exists: %v %v", ok, err)
	}
	// A link inside the workspace is no better: .sandboxforge is sbf's.
	os.Remove(filepath.Join(w.ws, ".sandboxforge"))
	os.Mkdir(filepath.Join(w.ws, "elsewhere"), 0o755)
	w.link("elsewhere", ".sandboxforge")
	if _, _, err := own.ReadFile("state.json", 10); codeOf(err) != coded.StateFileLink {
		t.Errorf("a link inside the workspace: %v", err)
	}
}

func TestALinkedFileIsRefusedForEveryUse(t *testing.T) {
	w := newWorld(t)
	own := In(w.ws, ".sandboxforge")
	if err := own.Make(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(w.ws, ".sandboxforge", "real"), []byte("x"), 0o644)
	w.link(filepath.Join(w.outside, "secret"), ".sandboxforge/out")
	w.link(filepath.Join(w.outside, "made-by-sbf"), ".sandboxforge/dangling")
	w.link("real", ".sandboxforge/inside")
	for _, name := range []string{"out", "dangling", "inside"} {
		for use, err := range uses(own, name) {
			if codeOf(err) != coded.StateFileLink || !strings.Contains(err.Error(), name) {
				t.Errorf("%s %s: %v", use, name, err)
			}
		}
		if err := own.WriteNew(name, []byte("new"), 0o644); !errors.Is(err, fs.ErrExist) {
			t.Errorf("write new over %s: %v", name, err)
		}
	}
	// A replacing write replaces the link itself; its target is untouched.
	if err := own.WriteFile("out", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, info, err := own.ReadFile("out", 100); err != nil || string(data) != "mine\n" || !info.Mode().IsRegular() {
		t.Errorf("after a write: %q %v", data, err)
	}
}

// A FIFO would hold an open, /dev/zero would never end a read: neither is
// opened, and a file larger than its bound is not read.
func TestOnlyRegularFilesWithinTheirBoundAreRead(t *testing.T) {
	w := newWorld(t)
	own := In(w.ws, ".sandboxforge")
	dir := filepath.Join(w.ws, ".sandboxforge")
	own.Make()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	w.link("/dev/zero", ".sandboxforge/zero")
	for name, code := range map[string]string{"fifo": coded.StateFileInvalid, "folder": coded.StateFileInvalid,
		"zero": coded.StateFileLink} {
		for use, err := range uses(own, name) {
			if codeOf(err) != code {
				t.Errorf("%s %s: %v", use, name, err)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 101), 0o644)
	_, _, err := own.ReadFile("big", 100)
	if c := coded.Of(err, ""); c == nil || c.Code != coded.StateFileInvalid || c.Details["limit_bytes"] != int64(100) {
		t.Errorf("101 bytes read within 100: %v", err)
	}
	if data, _, err := own.ReadFile("big", 101); err != nil || len(data) != 101 {
		t.Errorf("101 bytes within 101: %d %v", len(data), err)
	}
	// The folder itself must be a folder.
	os.WriteFile(filepath.Join(w.ws, "file"), nil, 0o644)
	if _, _, err := In(w.ws, "file").ReadFile("x", 1); codeOf(err) != coded.StateFileInvalid {
		t.Errorf("a file for a folder: %v", err)
	}
}

func TestMissingFilesAndFoldersAreMissing(t *testing.T) {
	w := newWorld(t)
	own := In(w.ws, ".sandboxforge")
	if _, _, err := own.ReadFile("state.json", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read without the folder: %v", err)
	}
	if ok, err := own.Exists(); ok || err != nil {
		t.Errorf("exists: %v %v", ok, err)
	}
	if names, err := own.Sub("locks").Names(); names != nil || err != nil {
		t.Errorf("names: %v %v", names, err)
	}
	priv := At(filepath.Join(w.ws, "state")).Private("mcp")
	if err := priv.WriteNew("t", []byte("x"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a write into a folder not made: %v", err)
	}
	if err := priv.Make(); err != nil {
		t.Fatal(err)
	}
	if err := priv.WriteNew("t", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(priv.Path()); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("a private folder: %v %v", info.Mode(), err)
	}
	if info, err := os.Stat(priv.File("t").Path()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("its file: %v %v", info.Mode(), err)
	}
}

// sbf replaces its files atomically (a new file renamed over the old), and
// readers take no lock: a replacement between a reader's look and its open
// is not a link (TestParallelEditsLoseNothing once failed so, "is a link").
func TestAReplacementWhileOpeningIsNotALink(t *testing.T) {
	own := In(t.TempDir(), ".sandboxforge")
	if err := own.Make(); err != nil {
		t.Fatal(err)
	}
	if err := own.WriteVolatile("overrides.toml", []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := own.WriteVolatile("overrides.toml", []byte(strings.Repeat("b", i%7+1)), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20000 {
		if _, _, err := own.ReadFile("overrides.toml", 100); err != nil {
			t.Errorf("a read beside a replacing writer: %v", err)
			break
		}
	}
	close(stop)
	<-done
}

// A link swapped in and out under the name while readers open it (each
// swap a rename, as an attacker would make it atomic) is never followed:
// a read gives the regular file's bytes or is refused as a link.
func TestALinkSwappedInWhileOpeningIsNeverFollowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sandboxforge")
	own := At(filepath.Dir(dir)).Sub(".sandboxforge")
	if err := own.Make(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "target"), []byte("followed"), 0o644)
	os.Symlink("target", filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "state.json"), []byte("regular"), 0o644)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Swap a link in, then a regular file, each by a rename.
			tmp := filepath.Join(dir, "swap")
			if i%2 == 0 {
				os.Symlink("target", tmp)
			} else {
				os.WriteFile(tmp, []byte("regular"), 0o644)
			}
			os.Rename(tmp, filepath.Join(dir, "state.json"))
		}
	}()
	defer func() { close(stop); <-done }()
	refusals := 0
	for range 20000 {
		data, _, err := own.ReadFile("state.json", 100)
		switch {
		case err != nil && codeOf(err) == coded.StateFileLink:
			refusals++
		case err != nil:
			t.Fatalf("read: %v", err)
		case string(data) != "regular":
			t.Fatalf("a read followed the link: %q", data)
		}
	}
	t.Logf("%d of 20000 reads refused as a link", refusals)
}
