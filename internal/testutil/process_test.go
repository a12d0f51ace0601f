package testutil

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What CoverSources opens for the tests that run sbf as a process is what sbf and sbf-server
// are built from: both mains, a package only sbf-server links, a file only embedded, go.mod
// and go.sum; and no test file.
func TestSourcesOfTheCommandsAreWhatTheyAreBuiltFrom(t *testing.T) {
	names, err := sourcesOf("../../cmd/sbf", "../../cmd/sbf-server")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cmd/sbf/main.go", "cmd/sbf-server/main.go", "mcpserver/server.go", "go.mod",
		"go.sum", "drivers/lima/wrappers"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, filepath.Join(root, want)) }) {
			t.Errorf("%s is not among the %d sources", want, len(names))
		}
	}
	if i := slices.IndexFunc(names, func(n string) bool { return strings.HasSuffix(n, "_test.go") }); i >= 0 {
		t.Errorf("a test file among the sources: %s", names[i])
	}
}
