package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// A tarEntry is what a reader of an archive sees of one of its entries.
type tarEntry struct {
	name     string
	typeflag byte
	mode     int64
	uid, gid int
	body     string
	mtime    int64 // seconds since 1970
}

// readTar reads a whole tar, failing on a name that would land outside the folder it is
// unpacked into, and on a name seen twice.
func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var entries []tarEntry
	seen := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("reading the tar: %v", err)
		}
		if path.IsAbs(h.Name) || strings.Contains(h.Name, `\`) || h.Name == ".." ||
			strings.HasPrefix(h.Name, "../") || strings.Contains(h.Name, "/../") || strings.HasSuffix(h.Name, "/..") {
			t.Errorf("entry %q lands outside the folder it is unpacked into", h.Name)
		}
		if seen[h.Name] {
			t.Errorf("entry %q appears twice", h.Name)
		}
		seen[h.Name] = true
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s from the tar: %v", h.Name, err)
		}
		entries = append(entries, tarEntry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, string(body), h.ModTime.Unix()})
	}
}

// archive is an image archive as a reader walks it: each blob it fetches is checked against
// its descriptor and remembered, so that blobs nothing names can be found afterwards.
type archive struct {
	t       *testing.T
	entries []tarEntry
	files   map[string][]byte
	fetched map[string]bool
}

func openArchive(t *testing.T, file string) *archive {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &archive{t: t, files: map[string][]byte{}, fetched: map[string]bool{}}
	a.entries = readTar(t, f)
	for _, e := range a.entries {
		a.files[e.name] = []byte(e.body)
	}
	return a
}

// blob fetches what d describes, after checking that its name is the sha256 of its bytes and
// its size theirs.
func (a *archive) blob(d descriptor) []byte {
	a.t.Helper()
	hexSum, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		a.t.Fatalf("digest %q is not sha256", d.Digest)
	}
	name := "blobs/sha256/" + hexSum
	data, ok := a.files[name]
	if !ok {
		a.t.Fatalf("the archive has no %s (%s)", name, d.MediaType)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexSum {
		a.t.Errorf("%s holds bytes whose sha256 is %x", name, sum)
	}
	if int64(len(data)) != d.Size {
		a.t.Errorf("%s: %d bytes, its descriptor says %d", name, len(data), d.Size)
	}
	a.fetched[name] = true
	return data
}

func (a *archive) json(d descriptor, v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.blob(d), v); err != nil {
		a.t.Fatalf("decoding %s: %v", d.MediaType, err)
	}
}

// unreferenced lists the blobs no descriptor fetched so far names.
func (a *archive) unreferenced() []string {
	var names []string
	for name, data := range a.files {
		if strings.HasPrefix(name, "blobs/sha256/") && len(data) > 0 && !a.fetched[name] {
			names = append(names, name)
		}
	}
	return names
}

func gunzip(t *testing.T, gz []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("the layer is not gzip: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("uncompressing the layer: %v", err)
	}
	return data
}

// standIns writes a stand-in for each program GoReleaser builds, for each architecture, and
// an artifacts.json naming them among builds the image leaves out. On disk they are not
// executable: the layer sets the modes itself.
func standIns(t *testing.T, dir string) string {
	t.Helper()
	list := []artifact{
		{Name: "sbf", Path: filepath.Join(dir, "nowhere"), Goos: "darwin", Goarch: "arm64", Type: "Binary"},
		{Name: "sbf_1.2.3_linux_amd64.tar.gz", Path: filepath.Join(dir, "nowhere"), Goos: "linux", Goarch: "amd64",
			Type: "Archive"},
	}
	for _, arch := range architectures {
		for _, p := range programs {
			file := filepath.Join(dir, p+"_linux_"+arch, p)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(standIn(p, arch)), 0o600); err != nil {
				t.Fatal(err)
			}
			list = append(list, artifact{Name: p, Path: file, Goos: "linux", Goarch: arch, Type: "Binary"})
		}
	}
	return writeArtifacts(t, dir, list)
}

func standIn(program, arch string) string {
	return "#stand-in " + program + " for linux/" + arch + "\n"
}

func writeArtifacts(t *testing.T, dir string, list []artifact) string {
	t.Helper()
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "artifacts.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %.60q: %v", data, err)
	}
}
