package hostpath

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"testing"
)

// BenchmarkWriterExtract copies back a tree of 4,000 small files five folders
// deep, as a build output looks: the cost of judging every entry.
func BenchmarkWriterExtract(b *testing.B) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "top/", Typeflag: tar.TypeDir, Mode: 0o755})
	for d := range 40 {
		dir := fmt.Sprintf("top/a%d/b/c/d", d)
		for _, p := range []string{fmt.Sprintf("top/a%d/", d), fmt.Sprintf("top/a%d/b/", d),
			fmt.Sprintf("top/a%d/b/c/", d), dir + "/"} {
			tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeDir, Mode: 0o755})
		}
		for f := range 100 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s/f%d.js", dir, f), Typeflag: tar.TypeReg, Mode: 0o644,
				Size: 64})
			tw.Write(bytes.Repeat([]byte("x"), 64))
		}
	}
	tw.Close()
	archive := buf.Bytes()
	ws := b.TempDir()
	p := Policy{Roots: []string{ws}}
	for b.Loop() {
		os.RemoveAll(ws + "/out")
		w, err := p.Writer(ws, "out", Guard{Protect: DefaultProtect})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Extract(bytes.NewReader(archive), "top"); err != nil {
			b.Fatal(err)
		}
		w.Close()
	}
}
