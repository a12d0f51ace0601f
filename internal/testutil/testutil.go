// Package testutil holds what several packages' tests share: golden
// archives (txtar) and writing fixture files.
package testutil

import (
	"os"
	"path/filepath"
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
