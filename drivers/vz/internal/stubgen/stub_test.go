package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A module shaped like Code-Hex/vz: cgo with a preamble, C types in
// unexported signatures and in a function literal, an arm64-only file,
// an internal package a public signature needs and one only bodies used.
var fakeModule = map[string]string{
	"go.mod": "module example.com/fakevz\n\ngo 1.22\n\nrequire golang.org/x/mod v0.22.0\n",
	"vm.go": `package fakevz

/*
#include <stdlib.h>
int answer(void) { return 42; }
*/
import "C"
import (
	"fmt"
	"unsafe"

	"example.com/fakevz/internal/objc"
	"example.com/fakevz/internal/unused"
)

// Machine is documented.
type Machine struct {
	*objc.Pointer
	state int
}

type char C.char

func (c *char) CString() *C.char { return (*C.char)(c) }

var answer = func() int { return int(C.answer()) }

// NewMachine makes one.
func NewMachine(cpus uint, memory uint64) (*Machine, error) {
	unused.Touch()
	if cpus == 0 {
		return nil, fmt.Errorf("no cpus")
	}
	return &Machine{state: answer()}, nil
}

//export callback
func callback(h C.uintptr_t, p unsafe.Pointer) {}

func (m *Machine) Start() error { return nil }
`,
	"mac_arm64.go": "//go:build darwin && arm64\n\npackage fakevz\n\nfunc NewMacPlatform() int { return " +
		"int(C.answer()) }\n",
	"internal/objc/objc.go": "package objc\n\n// #include <stdlib.h>\nimport \"C\"\n\ntype Pointer struct{ p " +
		"uintptr }\n",
	"internal/unused/unused.go": "package unused\n\nimport _ \"golang.org/x/mod/semver\"\n\nfunc Touch() {}\n",
	"cmd/tool/main.go":          "package main\n\nimport \"C\"\n\nfunc main() {}\n",
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGenerateKeepsTheAPIAndDropsCgo(t *testing.T) {
	dst := t.TempDir()
	if err := generate(writeTree(t, fakeModule), dst, "v1.0.0"); err != nil {
		t.Fatal(err)
	}
	vm := read(t, dst, "vm.go")
	for _, want := range []string{
		"func NewMachine(cpus uint, memory uint64) (*Machine, error) { panic(\"vz stub\") }",
		"func (m *Machine) Start() error { panic(\"vz stub\") }",
		"type char byte",
		"func (c *char) CString() *byte",
		"func callback(h uintptr, p unsafe.Pointer)",
		"\"example.com/fakevz/internal/objc\"",
	} {
		if !strings.Contains(vm, want) {
			t.Errorf("vm.go lacks %q:\n%s", want, vm)
		}
	}
	for _, gone := range []string{"C.", "import \"C\"", "#include", "//export", "fmt", "internal/unused",
		"Machine is documented"} {
		if strings.Contains(vm, gone) {
			t.Errorf("vm.go still has %q:\n%s", gone, vm)
		}
	}
	if mac := read(t, dst, "mac_arm64.go"); !strings.Contains(mac, "//go:build darwin && arm64") {
		t.Errorf("the build line was lost:\n%s", mac)
	}
	for _, absent := range []string{"internal/unused", "cmd"} {
		if _, err := os.Stat(filepath.Join(dst, absent)); err == nil {
			t.Errorf("%s was stubbed though nothing public needs it", absent)
		}
	}
	if mod := read(t, dst, "go.mod"); mod != "module example.com/fakevz\n\ngo 1.22\n" {
		t.Errorf("go.mod keeps a requirement only bodies used:\n%s", mod)
	}
}

// TestStubCompilesForEveryDarwinArch builds the stub as a module of its
// own, without cgo: what the check relies on.
func TestStubCompilesForEveryDarwinArch(t *testing.T) {
	dst := t.TempDir()
	if err := generate(writeTree(t, fakeModule), dst, "v1.0.0"); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"arm64", "amd64"} {
		cmd := exec.Command("go", "vet", "./...")
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("darwin/%s: %v\n%s", arch, err, out)
		}
	}
}

func TestGenerateRefusesCgoItCannotRemove(t *testing.T) {
	files := map[string]string{
		"go.mod": "module example.com/bad\n\ngo 1.22\n",
		"bad.go": "package bad\n\nimport \"C\"\n\nconst Size = C.sizeof_int\n",
	}
	err := generate(writeTree(t, files), t.TempDir(), "v1.0.0")
	if err == nil || !strings.Contains(err.Error(), "cgo is still used") {
		t.Errorf("err = %v", err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
