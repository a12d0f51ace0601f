package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crossvet checks for the platform it is told, not the one it runs on: a
// call Linux has and Windows lacks fails for windows alone, and a vet
// finding in a windows-only file is reported for windows alone.
func TestCrossvetChecksTheTargetPlatform(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/a\n\ngo 1.24\n")
	write("a.go", "package a\n\nimport \"syscall\"\n\nfunc Pid() int { return syscall.Getpid() }\n")
	const kill = "package a\n\nimport \"syscall\"\n\nfunc Kill() { syscall.Kill(1, 0) }\n"
	write("kill_unix.go", "//go:build unix\n\n"+kill)
	write("p_windows.go", "package a\n\nfunc P(x int) int { x = x; return x }\n")
	t.Chdir(dir)
	check := func(goos string, wantCode int, want string) {
		t.Helper()
		var out bytes.Buffer
		if code := run(target{goos: goos, goarch: "amd64"}, []string{"./..."}, &out); code != wantCode ||
			!strings.Contains(out.String(), want) {
			t.Errorf("crossvet -os %s: exit %d, output %q; want %d and %q", goos, code, out.String(), wantCode, want)
		}
	}
	check("linux", 0, "")
	check("windows", 3, "p_windows.go:3:21: self-assignment of x")
	// A unix file's call, moved where every platform builds it, fails for windows as a compiler would.
	if err := os.Remove(filepath.Join(dir, "kill_unix.go")); err != nil {
		t.Fatal(err)
	}
	write("kill.go", kill)
	check("linux", 0, "")
	check("windows", 1, "kill.go:5:23: undefined: syscall.Kill")
}
