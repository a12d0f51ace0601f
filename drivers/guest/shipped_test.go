package guest

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
)

const canary = "CANARY-outside-the-workspace"

// linkedWorkspace is a workspace whose project folder proj holds links
// out (to a folder and a file holding the canary, and to nothing) and
// links that stay inside the workspace.
func linkedWorkspace(t *testing.T) (root, dir string) {
	t.Helper()
	outside := t.TempDir()
	testutil.WriteFile(t, filepath.Join(outside, "secret"), canary)
	root = t.TempDir()
	dir = filepath.Join(root, "proj")
	testutil.WriteFile(t, filepath.Join(dir, "app", "Dockerfile"), "FROM scratch\n")
	testutil.WriteFile(t, filepath.Join(root, "shared", "real.env"), "INSIDE=1\n")
	for link, target := range map[string]string{
		"linkdir":      outside,
		"envlink":      filepath.Join(outside, "secret"),
		"dangling":     filepath.Join(outside, "missing"),
		"inside.env":   "../shared/real.env",
		"app/out":      filepath.Join(outside, "secret"),
		"app/up":       "../../../" + filepath.Base(outside) + "/secret",
		"app/alias":    "Dockerfile",
		"app/outdir":   outside,
		"app/loop":     ".",
		"sharedlink":   "../shared",
		"app/sub/deep": "../../linkdir/secret",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, dir
}

// capturing records every staged file's content.
type capturing struct {
	scripted
	files map[string]string
}

func (c *capturing) CopyIn(_ context.Context, local, _ string) error {
	c.files = map[string]string{}
	return filepath.Walk(local, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(local, p)
			c.files[filepath.ToSlash(rel)] = string(data)
			return err
		}
		return err
	})
}

func TestBundleShipsOnlyWorkspaceFiles(t *testing.T) {
	root, dir := linkedWorkspace(t)
	p := &Project{Name: "sbf-api", Root: root, Dir: dir, Resolved: []byte("services: {}\n"),
		Extra: []string{"app", "inside.env", "sharedlink/real.env"}, Bundle: "b1"}
	r := &capturing{}
	if _, err := ApplyProject(context.Background(), r, "docker", p); err != nil {
		t.Fatal(err)
	}
	names := strings.Join(keys(r.files), ",")
	if names != ".sbf-bundle,app/Dockerfile,compose.yaml,inside.env,sharedlink/real.env" {
		t.Errorf("shipped %s", names)
	}
	if r.files["inside.env"] != "INSIDE=1\n" {
		t.Errorf("a link inside the workspace was not followed: %q", r.files["inside.env"])
	}
	for name, data := range r.files {
		if strings.Contains(data, canary) {
			t.Errorf("%s carries the canary", name)
		}
	}
}

func TestBundleRefusesPathsThatLeadOut(t *testing.T) {
	root, dir := linkedWorkspace(t)
	var messages []string
	for _, rel := range []string{"linkdir/secret", "envlink", "dangling", "app/sub/deep"} {
		p := &Project{Name: "sbf-api", Root: root, Dir: dir, Resolved: []byte("services: {}\n"),
			Extra: []string{"app/Dockerfile", rel}, Bundle: "b1"}
		r := &capturing{}
		_, err := ApplyProject(context.Background(), r, "docker", p)
		var ce *coded.Error
		if !errors.As(err, &ce) || ce.Code != "HOST_PATH_DENIED" || ce.Details["path"] != rel ||
			!strings.Contains(ce.Message, rel) {
			t.Errorf("%s: %v, want HOST_PATH_DENIED naming it", rel, err)
			continue
		}
		if r.files != nil {
			t.Errorf("%s: something was shipped: %v", rel, keys(r.files))
		}
		messages = append(messages, strings.ReplaceAll(ce.Message, rel, "X"))
	}
	if len(messages) == 4 && (messages[1] != messages[2]) {
		t.Errorf("a link out to a file and to nothing answer differently:\n%s\n%s", messages[1], messages[2])
	}
}

func TestWalkShippedStaysInTheProjectsWorkspace(t *testing.T) {
	root, dir := linkedWorkspace(t)
	var ce *coded.Error
	err := WalkShipped(filepath.Join(root, "shared"), dir, "app", func(ShippedEntry) error { return nil })
	if !errors.As(err, &ce) || ce.Code != "HOST_PATH_DENIED" {
		t.Errorf("a project folder outside the workspace: %v", err)
	}
	for _, rel := range []string{"../shared/real.env", "/etc/passwd"} {
		err := WalkShipped(root, dir, rel, func(ShippedEntry) error { return nil })
		if !errors.As(err, &ce) || ce.Code != "HOST_PATH_DENIED" {
			t.Errorf("%s: %v", rel, err)
		}
	}
	if err := WalkShipped(root, dir, "nope", func(ShippedEntry) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing path: %v", err)
	}
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
