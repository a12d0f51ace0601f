package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sources are the files and folders of this module that sbf and sbf-server are compiled or
// embedded from, as they were when BuildSBF built them. go test caches a package's result under
// its test binary and the files its tests opened (their sizes and times; a folder's listing);
// the test binary of a package that runs sbf as a process links only part of what sbf is, so
// without them in the key a change to the engine replayed the pass of a test that never ran it.
var sources struct {
	files, dirs []string
	was         map[string]string // path → what it was when recorded (a file's size and time, a folder's names)
	once        sync.Once
	err         error
}

// recordSources lists the sources of the commands under root (go list) and notes each as it is.
func recordSources(root string) error {
	tmpl := `{{if and .Module .Module.Main}}{{$d := .Dir}}f {{.Module.GoMod}}
d {{$d}}
{{range .GoFiles}}f {{$d}}/{{.}}
{{end}}{{range .CgoFiles}}f {{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}e {{$d}}/{{.}}
{{end}}{{end}}`
	out, err := exec.Command("go", "list", "-deps", "-f", tmpl, root+"/cmd/sbf", root+"/cmd/sbf-server").Output()
	if err != nil {
		return fmt.Errorf("listing the sources of sbf and sbf-server: %w", err)
	}
	var files, dirs []string
	for line := range strings.Lines(string(out)) {
		kind, path, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch kind {
		case "d":
			dirs = append(dirs, path)
		case "e": // a file added to an embedded folder is in sbf too: its folder's listing counts
			dirs = append(dirs, filepath.Dir(path))
			files = append(files, path)
		case "f":
			files = append(files, path)
			if filepath.Base(path) == "go.mod" {
				files = append(files, filepath.Join(filepath.Dir(path), "go.sum"))
			}
		}
	}
	slices.Sort(files)
	slices.Sort(dirs)
	sources.files, sources.dirs = slices.Compact(files), slices.Compact(dirs)
	sources.was = map[string]string{}
	for _, p := range append(slices.Clone(sources.files), sources.dirs...) {
		sources.was[p] = describe(p)
	}
	return nil
}

// describe is what sbf's build sees of a source: a file's size and time, a folder's names but
// its tests' (a test file is no part of sbf).
func describe(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	if !fi.IsDir() {
		return fmt.Sprintf("%d %s", fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			names = append(names, e.Name())
		}
	}
	return strings.Join(names, "/")
}

// CoverSources opens every source BuildSBF recorded, once per test process, so go test's cache
// key holds them. Only a test can (go test hears of nothing TestMain opens): every test that
// runs sbf or sbf-server calls it, or a helper of its does.
func CoverSources(t testing.TB) {
	t.Helper()
	sources.once.Do(func() {
		if sources.was == nil {
			sources.err = fmt.Errorf("CoverSources before BuildSBF: nothing recorded")
		}
		for _, p := range append(slices.Clone(sources.files), sources.dirs...) {
			f, err := os.Open(p)
			if err != nil {
				sources.err = fmt.Errorf("opening a source of sbf: %w", err)
				return
			}
			f.Close()
		}
	})
	if sources.err != nil {
		t.Fatal(sources.err)
	}
}

// SourcesChangedSinceBuild lists the sources that are no longer what BuildSBF built sbf from.
// A TestMain fails a run when any is: go test would store the pass of the sbf built before the
// change under the changed files' times, and replay it for the changed sbf.
func SourcesChangedSinceBuild() []string {
	var changed []string
	for _, p := range append(slices.Clone(sources.files), sources.dirs...) {
		if describe(p) != sources.was[p] {
			changed = append(changed, p)
		}
	}
	return changed
}
