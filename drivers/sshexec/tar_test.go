package sshexec

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body, link string
	dir              bool
}

func archive(t *testing.T, entries ...entry) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return &buf
}

// Nothing an archive holds can write outside its destination: not a name
// with .., not an absolute one, not a path through a symlink already
// there or unpacked from the archive.
func TestReadTarStaysInside(t *testing.T) {
	outside := t.TempDir()
	for name, entries := range map[string][]entry{
		"dotdot":    {{name: "top/../../escape", body: "x"}},
		"absolute":  {{name: "/escape", body: "x"}},
		"other top": {{name: "elsewhere/escape", body: "x"}},
		"through an unpacked link": {{name: "top/", dir: true}, {name: "top/l", link: outside},
			{name: "top/l/escape", body: "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			ReadTar(archive(t, entries...), "top", dst)
			if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
				t.Fatal("an archive entry was written outside the destination")
			}
		})
	}
	// A symlink already in the destination does not lead out either.
	dst := filepath.Join(t.TempDir(), "dst")
	os.MkdirAll(dst, 0o755)
	os.Symlink(outside, filepath.Join(dst, "sub"))
	err := ReadTar(archive(t, entry{name: "top/", dir: true}, entry{name: "top/sub/escape", body: "x"}), "top", dst)
	if _, statErr := os.Stat(filepath.Join(outside, "escape")); statErr == nil || err == nil {
		t.Fatalf("wrote through a symlink in the destination (err %v)", err)
	}
	// What is inside arrives.
	ok := filepath.Join(t.TempDir(), "ok")
	if err := ReadTar(archive(t, entry{name: "top/", dir: true}, entry{name: "top/a/b.txt", body: "hello"}), "top",
		ok); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ok, "a", "b.txt")); !strings.Contains(string(b), "hello") {
		t.Errorf("b.txt = %q", b)
	}
}
