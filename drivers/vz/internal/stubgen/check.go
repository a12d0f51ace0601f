package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// checkOptions say what to type-check, and how.
type checkOptions struct {
	Root     string   // the main module's folder (where go.mod is)
	Module   string   // the cgo module to stub: github.com/Code-Hex/vz/v3
	Packages []string // patterns, relative to Root
	Arches   []string // GOARCH values, each checked with GOOS=darwin
	Overlay  string   // a go build -overlay file, for the deliberate-break test
	Go       string   // the go command
}

// check type-checks the packages for macOS against a stub of the module:
// go vet's checks from source (internal/tools/crossvet) for GOOS=darwin
// with a temporary copy of go.mod that replaces the module with the stub
// (-modfile), so the repository is never touched. The cgo build tag is set
// by hand with cgo itself off: files built only with cgo (all of the
// driver's framework calls) are checked, and no C compiler for darwin is
// needed since the stub has no cgo left.
func check(o checkOptions) error {
	dir, err := locate(o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sbf-check-darwin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	stub := filepath.Join(tmp, "stub")
	if err := generate(dir.Dir, stub, dir.Version); err != nil {
		return err
	}
	modfile := filepath.Join(tmp, "go.mod")
	if err := tempModfile(o.Root, modfile, o.Module, stub); err != nil {
		return err
	}
	var failed []string
	for _, arch := range o.Arches {
		args := []string{"run", "./internal/tools/crossvet", "-os", "darwin", "-arch", arch, "-tags", "cgo",
			"-modfile", modfile}
		if o.Overlay != "" {
			args = append(args, "-overlay", o.Overlay)
		}
		cmd := exec.Command(o.Go, append(args, o.Packages...)...)
		cmd.Dir = o.Root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			failed = append(failed, fmt.Sprintf("darwin/%s: %v\n%s", arch, err, out))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("type-checking %s for macOS against %s@%s failed:\n%s",
			strings.Join(o.Packages, " "), o.Module, dir.Version, strings.Join(failed, "\n"))
	}
	return nil
}

type moduleDir struct{ Dir, Version string }

// locate finds the module's source as the main module requires it,
// downloading it into the module cache if it is not there yet.
func locate(o checkOptions) (moduleDir, error) {
	cmd := exec.Command(o.Go, "mod", "download", "-json", o.Module)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return moduleDir{}, fmt.Errorf("finding %s: %v\n%s", o.Module, err, stderr.Bytes())
	}
	var m moduleDir
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return moduleDir{}, fmt.Errorf("finding %s: go mod download said %s", o.Module, out)
	}
	return m, nil
}

// tempModfile copies go.mod and go.sum beside path, adding the replace.
func tempModfile(root, path, module, stub string) error {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	if !bytes.Contains(mod, []byte(module+" ")) {
		return fmt.Errorf("%s/go.mod does not require %s", root, module)
	}
	mod = append(mod, fmt.Sprintf("\nreplace %s => %s\n", module, stub)...)
	if err := os.WriteFile(path, mod, 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".mod")+".sum", sum, 0o644)
}
