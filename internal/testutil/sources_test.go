package testutil

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// What BuildSBF records of what sbf and sbf-server are built from: both mains, a package only
// sbf-server links, an embedded file and its folder, go.mod and go.sum; no test file.
func TestSourcesAreWhatTheCommandsAreBuiltFrom(t *testing.T) {
	if err := recordSources("../.."); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	has := func(list []string, want string) bool { return slices.Contains(list, filepath.Join(root, want)) }
	for _, want := range []string{"cmd/sbf/main.go", "cmd/sbf-server/main.go", "mcpserver/server.go", "go.mod",
		"go.sum"} {
		if !has(sources.files, want) {
			t.Errorf("%s is not among the %d files", want, len(sources.files))
		}
	}
	for _, want := range []string{"mcpserver", "drivers/lima/wrappers"} {
		if !has(sources.dirs, want) {
			t.Errorf("folder %s is not among the %d folders", want, len(sources.dirs))
		}
	}
	if i := slices.IndexFunc(sources.files, func(n string) bool { return strings.HasSuffix(n, "_test.go") }); i >= 0 {
		t.Errorf("a test file among the sources: %s", sources.files[i])
	}
	if changed := SourcesChangedSinceBuild(); len(changed) != 0 {
		t.Errorf("changed since recorded: %v", changed)
	}
}

// A source written or a file added to a source folder is a change; a test file added is not.
func TestSourcesChangedSinceBuild(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.go")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, "package a")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(file, old, old)
	sources.files, sources.dirs = []string{file}, []string{dir}
	sources.was = map[string]string{file: describe(file), dir: describe(dir)}
	t.Cleanup(func() { sources.files, sources.dirs, sources.was = nil, nil, nil })
	write(filepath.Join(dir, "a_test.go"), "package a")
	if changed := SourcesChangedSinceBuild(); len(changed) != 0 {
		t.Fatalf("a test file added: %v", changed)
	}
	write(file, "package b")
	if changed := SourcesChangedSinceBuild(); !slices.Equal(changed, []string{file}) {
		t.Fatalf("a source written: %v", changed)
	}
	write(filepath.Join(dir, "b.go"), "package a")
	if changed := SourcesChangedSinceBuild(); !slices.Contains(changed, dir) {
		t.Fatalf("a source added: %v", changed)
	}
}
