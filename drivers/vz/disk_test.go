package vz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor/supervisortest"
)

func TestCopySparseKeepsContentAndHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	data := make([]byte, 64*mib+123)
	copy(data, "head")
	copy(data[32*mib:], "middle")
	copy(data[len(data)-3:], "end")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cloneOrCopy(src, dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, data) {
		t.Fatal("the copy differs")
	}
	if n, ok := allocated(dst); ok && n > 8*mib {
		t.Errorf("the copy allocates %d bytes: holes were written out", n)
	}
	if err := copySparse(src, dst); err == nil {
		t.Error("copied over an existing file")
	}
}

func TestGrowNeverShrinks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "disk")
	os.WriteFile(p, make([]byte, 2*mib), 0o644)
	if err := grow(p, 4*mib); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(p); info.Size() != 4*mib {
		t.Errorf("size %d", info.Size())
	}
	if err := grow(p, mib); err == nil || !strings.Contains(err.Error(), "raise disk_gib") {
		t.Errorf("shrink: %v", err)
	}
	if diskBytes(15) != 15*gib || diskBytes(0.5) != gib/2 {
		t.Errorf("diskBytes %d %d", diskBytes(15), diskBytes(0.5))
	}
}

func TestCopyKernelDecompressesOnlyForArm64(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("Image"))
	zw.Close()
	src := filepath.Join(dir, "vmlinuz")
	os.WriteFile(src, gz.Bytes(), 0o644)
	for arch, want := range map[string][]byte{"aarch64": []byte("Image"), "x86_64": gz.Bytes()} {
		dst := filepath.Join(dir, arch)
		if err := copyKernel(src, dst, arch); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, want) {
			t.Errorf("%s: kernel %q", arch, got)
		}
	}
}

func TestCheckDigest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "disk")
	os.WriteFile(p, []byte("disk"), 0o644)
	sum := sha256.Sum256([]byte("disk"))
	good := "sha256:" + hex.EncodeToString(sum[:])
	if err := checkDigest(p, good); err != nil {
		t.Errorf("good digest: %v", err)
	}
	if err := checkDigest(p, "sha256:"+strings.ToUpper(good[7:])); err != nil {
		t.Errorf("an upper-case digest: %v", err)
	}
	if err := checkDigest(p, "sha256:"+strings.Repeat("0", 64)); err == nil {
		t.Error("a wrong digest passed")
	}
	if err := checkDigest(p, ""); err != nil {
		t.Errorf("no digest: %v", err)
	}
}

// sessionOf reads a process's session id (Linux's /proc/PID/stat).
func sessionOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	_, after, _ := strings.Cut(string(b), ") ")
	if f := strings.Fields(after); len(f) > 3 {
		return f[3]
	}
	return ""
}

func TestCommandStarterDetachesAndLogs(t *testing.T) {
	ours := sessionOf("self")
	if ours == "" {
		t.Skip("no /proc here")
	}
	dir := t.TempDir()
	script := `echo "supervising $0 in session $(cut -d')' -f2 /proc/$$/stat | cut -d' ' -f5)"`
	start := CommandStarter("/bin/sh", "-c", script)
	if err := start(dir); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, layout.SupervisorLog)
	var line string
	supervisortest.Eventually(t, "the supervisor logged", func() bool {
		b, _ := os.ReadFile(log)
		line = strings.TrimSpace(string(b))
		return strings.HasPrefix(line, "supervising "+dir+" in session ")
	})
	if sid := strings.TrimPrefix(line, "supervising "+dir+" in session "); sid == ours || sid == "" {
		t.Errorf("the supervisor shares sbf's session %s: %q", ours, line)
	}
	if err := CommandStarter("/nonexistent/sbf", "vz-run")(dir); err == nil {
		t.Error("starting a missing program succeeded")
	}
}
