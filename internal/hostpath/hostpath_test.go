package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

func denied(err error) bool {
	var e *coded.Error
	return errors.As(err, &e) && e.Code == Denied
}

func TestConfineRefusesEveryEscape(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "link-out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "file-out"))
	p := Policy{Roots: []string{ws}}
	for _, path := range []string{"../" + filepath.Base(outside), outside, "link-out", "link-out/secret", "file-out",
		"link-out/new-file", "src/../../" + filepath.Base(outside) + "/secret"} {
		if _, err := p.Confine(ws, path); !denied(err) {
			t.Errorf("%s: %v", path, err)
		}
	}
	for _, path := range []string{".", "src", "src/new/deeper/file", filepath.Join(ws, "src")} {
		pl, err := p.Confine(ws, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		pl.Close()
	}
	// Confinement holds at use: a folder swapped for a symlink after the
	// check does not lead out through the returned root.
	pl, err := p.Confine(ws, "src/victim")
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	os.RemoveAll(filepath.Join(ws, "src"))
	os.Symlink(outside, filepath.Join(ws, "src"))
	if err := pl.Root.WriteFile(pl.Rel, []byte("y"), 0o644); err == nil {
		t.Error("a write through a swapped-in symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err == nil {
		t.Error("the write landed outside the root")
	}
	if pl, err := (Policy{Roots: []string{ws, outside}}).Confine(ws, "link-out/secret"); err != nil {
		t.Errorf("an allowed extra root: %v", err)
	} else {
		pl.Close()
	}
}
