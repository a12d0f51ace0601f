package spec

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/sandboxforge/sbf/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Golden cases, one per file in testdata/spec: the archive's files are the
// layers (paths under global/ are the global config home; a "set" file
// holds one --set assignment per line; a "host" file names the OS), and
// "want" is the resolved config or the error list.
func TestGolden(t *testing.T) {
	testutil.RunGolden(t, "../testdata/spec/*.txtar", *update, renderCase)
}

func renderCase(t *testing.T, ar *txtar.Archive) string {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	home := filepath.Join(root, "global")
	host := Host{OS: "linux", Arch: "amd64"}
	var sets []string
	for _, f := range ar.Files {
		switch {
		case f.Name == "want":
		case f.Name == "set":
			sets = strings.Split(strings.TrimSpace(string(f.Data)), "\n")
		case f.Name == "host":
			host.OS = strings.TrimSpace(string(f.Data))
		default:
			dst := filepath.Join(ws, f.Name)
			if rest, ok := strings.CutPrefix(f.Name, "global/"); ok {
				dst = filepath.Join(home, rest)
			}
			testutil.WriteFile(t, dst, string(f.Data))
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	req, err := ParseSet(sets)
	if err != nil {
		return "set error: " + err.Error() + "\n"
	}
	r, err := Load(Options{Backends: linked, Root: ws, Host: host, ConfigHome: home, Request: req})
	return normalizePaths(describe(t, r, err), ws, home)
}

func describe(t *testing.T, r *Resolved, err error) string {
	var b bytes.Buffer
	var errs Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			b.WriteString(e.Error() + "\n")
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("Load: unexpected error type %T: %v", err, err)
	}
	b.WriteString("sources: " + strings.Join(r.Sources, ", ") + "\n")
	out, err := r.Config.TOML()
	if err != nil {
		t.Fatal(err)
	}
	b.Write(out)
	return b.String()
}

func normalizePaths(s, ws, home string) string {
	s = strings.ReplaceAll(s, ws+string(filepath.Separator), "")
	return strings.ReplaceAll(s, home+string(filepath.Separator), "global/")
}
