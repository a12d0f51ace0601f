package testutil

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
)

// TarEntry is what a test checks of one archive entry.
type TarEntry struct {
	Body string
	Mode int64
	Link string // a symlink's target
	Dir  bool
}

// ReadTar lists an archive's entries by name.
func ReadTar(t testing.TB, archive []byte) map[string]TarEntry {
	t.Helper()
	out := map[string]TarEntry{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading the archive: %v", err)
		}
		body, _ := io.ReadAll(tr)
		out[h.Name] = TarEntry{Body: string(body), Mode: h.Mode & 0o7777, Link: h.Linkname, Dir: h.Typeflag == tar.TypeDir}
	}
}
