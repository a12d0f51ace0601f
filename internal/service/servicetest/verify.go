// Package servicetest checks rendered service files with the platform's
// own tools, for tests here and in cmd/sbf.
package servicetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// VerifyUnit runs systemd-analyze verify --user over a unit named name
// (sbf-serve.service), failing the test on any complaint: the tool exits 0
// on unknown keys and bad values, and only says so. It needs the tool, not
// systemd as PID 1 (user mode wants only a runtime folder), and skips the
// test where the tool is missing.
func VerifyUnit(t testing.TB, name string, unit []byte) {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd); the unit was not verified")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(dir, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, "verify", "--user", "--man=no", path)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime, "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify --user %s: %v\n%s\nthe unit:\n%s", path, err, out, unit)
	}
}
