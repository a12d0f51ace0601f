package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	testEpoch   = 1767225600 // 2026-01-01T00:00:00Z
	testCreated = "2026-01-01T00:00:00Z"
)

func buildTestImage(t *testing.T, dir string, epoch int64) string {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("image-%d.tar", epoch))
	err := run(options{artifacts: standIns(t, dir), version: "v1.2.3", revision: "0123abcd",
		source: "https://example.invalid/sbf", epoch: epoch, out: out})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var wantAnnotations = map[string]string{
	"org.opencontainers.image.created":  testCreated,
	"org.opencontainers.image.licenses": "Apache-2.0",
	"org.opencontainers.image.revision": "0123abcd",
	"org.opencontainers.image.source":   "https://example.invalid/sbf",
	"org.opencontainers.image.title":    "sbf-kubevirt",
	"org.opencontainers.image.version":  "v1.2.3",
}

// The archive as a registry client reads it: index.json, the image index, a manifest per
// platform, its config and layer, every blob under the digest of its bytes.
func TestTheArchiveHoldsOneImagePerPlatform(t *testing.T) {
	a := openArchive(t, buildTestImage(t, t.TempDir(), testEpoch))
	if got := string(a.files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	for _, e := range a.entries {
		if e.mtime != testEpoch || e.uid != 0 || e.gid != 0 {
			t.Errorf("archive entry %s: time %d, owner %d:%d", e.name, e.mtime, e.uid, e.gid)
		}
	}
	var top manifest
	mustUnmarshal(t, a.files["index.json"], &top)
	if top.SchemaVersion != 2 || len(top.Manifests) != 1 || top.Manifests[0].MediaType != mediaIndex {
		t.Fatalf("index.json should name one image index: %+v", top)
	}
	names := top.Manifests[0].Annotations
	if names["org.opencontainers.image.ref.name"] != "v1.2.3" ||
		names["io.containerd.image.name"] != "docker.io/library/sbf-kubevirt:v1.2.3" {
		t.Errorf("index.json names the image %v, not v1.2.3 and sbf-kubevirt:v1.2.3", names)
	}
	var index manifest
	a.json(top.Manifests[0], &index)
	if index.MediaType != mediaIndex || !maps.Equal(index.Annotations, wantAnnotations) {
		t.Errorf("image index: %s with annotations %v", index.MediaType, index.Annotations)
	}
	var platforms []string
	for _, d := range index.Manifests {
		if d.Platform == nil || d.MediaType != mediaManifest {
			t.Fatalf("an image index entry without a platform, or not a manifest: %+v", d)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture+"/"+d.Platform.Variant)
		checkImage(t, a, d)
	}
	if got := strings.Join(platforms, " "); got != "linux/amd64/ linux/arm64/v8" {
		t.Errorf("the image index's platforms are %s", got)
	}
	checkDockerManifest(t, a)
	if stray := a.unreferenced(); len(stray) > 0 {
		t.Errorf("blobs nothing refers to: %v", stray)
	}
}

func checkImage(t *testing.T, a *archive, d descriptor) {
	t.Helper()
	arch := d.Platform.Architecture
	var m manifest
	a.json(d, &m)
	if m.MediaType != mediaManifest || m.Config == nil || m.Config.MediaType != mediaConfig || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != mediaLayer {
		t.Fatalf("%s manifest: %+v", arch, m)
	}
	if !maps.Equal(m.Annotations, wantAnnotations) {
		t.Errorf("%s manifest annotations: %v", arch, m.Annotations)
	}
	var c config
	a.json(*m.Config, &c)
	if c.OS != "linux" || c.Architecture != arch || c.Variant != d.Platform.Variant || c.Created != testCreated {
		t.Errorf("%s config: os %s, architecture %s, variant %q, created %s", arch, c.OS, c.Architecture,
			c.Variant, c.Created)
	}
	rc := c.Config
	if rc.User != "65532:65532" || len(rc.Entrypoint) != 1 || rc.Entrypoint[0] != "/usr/local/bin/sbf-kubevirt" {
		t.Errorf("%s config: user %q, entrypoint %q", arch, rc.User, rc.Entrypoint)
	}
	if !maps.Equal(rc.Labels, wantAnnotations) {
		t.Errorf("%s config labels: %v", arch, rc.Labels)
	}
	layer := gunzip(t, a.blob(m.Layers[0]))
	if diffID := fmt.Sprintf("sha256:%x", sha256.Sum256(layer)); len(c.RootFS.DiffIDs) != 1 ||
		c.RootFS.DiffIDs[0] != diffID || c.RootFS.Type != "layers" {
		t.Errorf("%s config rootfs %+v; the layer uncompressed is %s", arch, c.RootFS, diffID)
	}
	checkLayer(t, arch, readTar(t, bytes.NewReader(layer)))
}

// checkLayer compares the layer with the file system the controller expects, entry by entry.
func checkLayer(t *testing.T, arch string, got []tarEntry) {
	t.Helper()
	dir := func(name string, mode int64, id int) tarEntry {
		return tarEntry{name, tar.TypeDir, mode, id, id, "", testEpoch}
	}
	file := func(name string, mode int64, body string) tarEntry {
		return tarEntry{name, tar.TypeReg, mode, 0, 0, body, testEpoch}
	}
	want := []tarEntry{
		dir("etc/", 0o755, 0),
		file("etc/group", 0o644, "root:x:0:\nsbf:x:65532:\n"),
		file("etc/passwd", 0o644, "root:x:0:0:root:/root:/sbin/nologin\nsbf:x:65532:65532:sbf:/home/sbf:/sbin/nologin\n"),
		dir("home/", 0o755, 0),
		dir("home/sbf/", 0o700, 65532),
		dir("tmp/", 0o1777, 0),
		dir("usr/", 0o755, 0),
		dir("usr/local/", 0o755, 0),
		dir("usr/local/bin/", 0o755, 0),
		file("usr/local/bin/sbf", 0o755, standIn("sbf", arch)),
		file("usr/local/bin/sbf-kubevirt", 0o755, standIn("sbf-kubevirt", arch)),
		file("usr/local/bin/sbf-server", 0o755, standIn("sbf-server", arch)),
	}
	if len(got) != len(want) {
		t.Errorf("%s layer has %d entries, want %d: %v", arch, len(got), len(want), got)
		return
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s layer entry %d:\n got %+v\nwant %+v", arch, i, got[i], want[i])
		}
	}
}

// manifest.json, which Docker's own image store loads, names the same blobs, amd64's last.
func checkDockerManifest(t *testing.T, a *archive) {
	t.Helper()
	var entries []dockerEntry
	mustUnmarshal(t, a.files["manifest.json"], &entries)
	if len(entries) != 2 {
		t.Fatalf("manifest.json has %d entries", len(entries))
	}
	for _, e := range entries {
		if len(e.RepoTags) != 1 || e.RepoTags[0] != "sbf-kubevirt:v1.2.3" || len(e.Layers) != 1 {
			t.Errorf("manifest.json entry %+v", e)
		}
		for _, name := range append([]string{e.Config}, e.Layers...) {
			if _, ok := a.files[name]; !ok {
				t.Errorf("manifest.json names %s, which the archive lacks", name)
			}
		}
	}
	var last config
	mustUnmarshal(t, a.files[entries[1].Config], &last)
	if last.Architecture != "amd64" {
		t.Errorf("manifest.json's last entry is for %s", last.Architecture)
	}
}

// The same binaries, commit and time give the same bytes, so the same digest; another time, another.
func TestTheSameInputsGiveTheSameDigest(t *testing.T) {
	first := buildTestImage(t, t.TempDir(), testEpoch)
	second := buildTestImage(t, t.TempDir(), testEpoch)
	later := buildTestImage(t, t.TempDir(), testEpoch+1)
	digest := func(file string) string {
		var top manifest
		mustUnmarshal(t, openArchive(t, file).files["index.json"], &top)
		return top.Manifests[0].Digest
	}
	if d1, d2 := digest(first), digest(second); d1 != d2 {
		t.Errorf("two builds gave %s and %s", d1, d2)
	}
	if digest(first) == digest(later) {
		t.Errorf("a build a second later has the same digest: the creation time is not in the image")
	}
	b1, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Errorf("two builds gave archives of different bytes")
	}
}

// A release whose list lacks a build says which, and leaves no archive behind.
func TestAMissingBuildIsNamedAndNothingIsWritten(t *testing.T) {
	dir := t.TempDir()
	list := []artifact{}
	for _, arch := range architectures {
		for _, p := range programs {
			if arch == "arm64" && p == "sbf-server" {
				continue
			}
			list = append(list, artifact{Name: p, Path: filepath.Join(dir, p), Goos: "linux", Goarch: arch,
				Type: "Binary"})
		}
	}
	out := filepath.Join(dir, "image.tar")
	err := run(options{artifacts: writeArtifacts(t, dir, list), version: "v1", revision: "c", epoch: 1, out: out})
	if err == nil || !strings.Contains(err.Error(), "no linux/arm64 build of sbf-server") {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an archive was written: %v", err)
	}
}
