package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

func fileHarness(t *testing.T) (*harness, *sandbox.Target, hostpath.Policy) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	tgt, err := h.eng.Target(h.ws(), "api")
	if err != nil {
		t.Fatal(err)
	}
	return h, tgt, hostpath.Policy{Roots: []string{h.root}}
}

func write(t *testing.T, root string, files map[string]string) {
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCopyAndCollectStayInTheAllowedRoots(t *testing.T) {
	h, tgt, policy := fileHarness(t)
	ctx := context.Background()
	write(t, h.root, map[string]string{"src/a.txt": "A", "src/sub/b.txt": "B"})
	if err := tgt.CopyIn(ctx, policy, h.root, "src", "/work/src"); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.CopyOut(ctx, policy, h.root, "/work/src", "back"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "back", "sub", "b.txt")); string(b) != "B" {
		t.Errorf("round trip: %q", b)
	}
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret": "S"})
	os.Symlink(outside, filepath.Join(h.root, "out"))
	for _, c := range []struct{ in, out string }{{outside + "/secret", ""}, {"out/secret", ""}, {"../x", ""}, {"",
		outside + "/x"}, {"", "out/x"}} {
		var err error
		if c.in != "" {
			err = tgt.CopyIn(ctx, policy, h.root, c.in, "/work/x")
		} else {
			_, err = tgt.CopyOut(ctx, policy, h.root, "/work/src", c.out)
		}
		var ce *coded.Error
		if !errors.As(err, &ce) || ce.Code != hostpath.Denied {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("a copy wrote outside the allowed roots")
	}
	c, err := tgt.Collect(ctx, policy, h.root, []string{"/work/src/a.txt", "/work/src/sub/b.txt",
		"/work/src/a.txt"}, "artifacts")
	if err != nil || len(c.Artifacts) != 3 || filepath.Base(c.Artifacts[2].LocalPath) != "2-a.txt" ||
		c.Dest != filepath.Join(h.root, "artifacts") {
		t.Fatalf("collect: %+v %v", c, err)
	}
	if _, err := tgt.Collect(ctx, policy, h.root, nil, "artifacts"); !strings.Contains(fmtErr(err),
		"remote_paths cannot be empty") {
		t.Errorf("empty collect: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A re-sync sends only what changed and deletes what the host removed;
// excluded paths never travel.
func TestSyncSendsOnlyChanges(t *testing.T) {
	h, tgt, policy := fileHarness(t)
	ctx := context.Background()
	write(t, h.root, map[string]string{"app/main.go": "v1", "app/lib/x.go": "x", "app/.venv/bin/py": "venv",
		"app/.git/HEAD": "ref"})
	ex := tgt.SyncExcludes(nil)
	rep, err := tgt.Sync(ctx, policy, h.root, "app", "/work/app", ex)
	if err != nil || rep.Sent != 2 || rep.Unchanged != 0 {
		t.Fatalf("first sync: %+v %v", rep, err)
	}
	world := filepath.Join(h.simDir, "guests", h.instance("api"), "work", "app")
	if _, err := os.Stat(filepath.Join(world, ".venv")); err == nil {
		t.Error("an excluded folder was sent")
	}
	if _, err := os.Stat(filepath.Join(world, ".git")); err == nil {
		t.Error(".git was sent although [sync] include_git is false")
	}
	write(t, h.root, map[string]string{"app/main.go": "v2"})
	os.Remove(filepath.Join(h.root, "app", "lib", "x.go"))
	rep, err = tgt.Sync(ctx, policy, h.root, "app", "/work/app", ex)
	if err != nil || rep.Sent != 1 || rep.Deleted != 1 || rep.Unchanged != 0 {
		t.Fatalf("re-sync: %+v %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(world, "main.go")); string(b) != "v2" {
		t.Errorf("main.go = %q", b)
	}
	if _, err := os.Stat(filepath.Join(world, "lib", "x.go")); err == nil {
		t.Error("a file removed on the host stayed in the guest")
	}
	rep, _ = tgt.Sync(ctx, policy, h.root, "app", "/work/app", ex)
	if rep.Sent != 0 || rep.Unchanged != 1 {
		t.Errorf("an unchanged sync sent files: %+v", rep)
	}
}
