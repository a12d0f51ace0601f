// Package testutil holds what several packages' tests share: golden
// archives (txtar) and writing fixture files.
package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// File returns the content of a file in an archive, "" when absent.
func File(ar *txtar.Archive, name string) string {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

// SetFile replaces (or appends) a file in an archive.
func SetFile(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// WriteFile writes a fixture file, creating its folders.
func WriteFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// RunGolden runs one subtest per archive matching glob: render produces the
// output, which is compared with the archive's "want" file, or written
// there when update is set.
func RunGolden(t *testing.T, glob string, update bool, render func(*testing.T, *txtar.Archive) string) {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		t.Fatalf("no golden cases match %s", glob)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, ar)
			if update {
				SetFile(ar, "want", got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := File(ar, "want"); got != want {
				t.Errorf(
					"output differs from %s (rerun with -update to accept)\n--- got ---\n%s\n--- want ---\n%s",
					path,
					got,
					want,
				)
			}
		})
	}
}
