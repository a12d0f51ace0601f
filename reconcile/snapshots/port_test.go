package snapshots

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// An export is linked into place only if nothing is there: a file that
// appears while the backend writes the export stays as it was.
func TestAnExportNeverReplacesAFileThatAppearsMeanwhile(t *testing.T) {
	dir := t.TempDir()
	w, err := hostpath.Policy{Roots: []string{dir}}.Writer(dir, "out/x.snap", hostpath.Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dest := filepath.Join(dir, "out", "x.snap")
	err = writeNew(w, "out/x.snap", func(tmp string) error {
		if err := os.WriteFile(tmp, []byte("export"), 0o600); err != nil {
			return err
		}
		return os.WriteFile(dest, []byte("theirs"), 0o644)
	})
	if err == nil || coded.Of(err, "").Code != hostpath.Denied {
		t.Errorf("export onto a file that appeared: %v", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "theirs" {
		t.Errorf("the file that appeared reads %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "out", ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestAnExportIsANewFileOnlyItsOwnerReads(t *testing.T) {
	dir := t.TempDir()
	w, err := hostpath.Policy{Roots: []string{dir}}.Writer(dir, "x.snap", hostpath.Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := writeNew(w, "x.snap", func(tmp string) error { return os.WriteFile(tmp, []byte("e"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "x.snap"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the export: %v %v", info, err)
	}
}
