package ownfile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpen is what an own file's open costs over a plain one: the
// folder walked name by name, each looked at before and after its open.
func BenchmarkOpen(b *testing.B) {
	ws := b.TempDir()
	own := In(ws, ".sandboxforge").Sub("locks")
	if err := own.Make(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(own.Path(), "api.lock")
	os.WriteFile(path, nil, 0o644)
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("ownfile", func(b *testing.B) {
		for b.Loop() {
			f, err := own.OpenFile("api.lock", os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
