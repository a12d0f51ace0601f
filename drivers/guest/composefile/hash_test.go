package composefile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

const canary = "CANARY-outside-the-workspace"

// A compose path through a link to a folder outside the workspace is
// never read: neither hashed nor shipped, and the load says which path.
func TestBundleHashReadsOnlyWorkspaceFiles(t *testing.T) {
	outside := t.TempDir()
	testutil.WriteFile(t, filepath.Join(outside, "secret"), canary)
	root := t.TempDir()
	testutil.WriteFile(t, filepath.Join(root, "app", "Dockerfile"), "FROM scratch\n")
	for link, target := range map[string]string{"linkdir": outside, "app/out": filepath.Join(outside, "secret")} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	var h bytes.Buffer
	if err := hashTree(&h, root, root, "app"); err != nil || !strings.Contains(h.String(), "FROM scratch") {
		t.Fatalf("hashing app: %v (%q)", err, h.String())
	}
	if strings.Contains(h.String(), canary) {
		t.Error("a link out inside a folder was hashed")
	}
	h.Reset()
	err := hashTree(&h, root, root, "linkdir/secret")
	var ce *coded.Error
	if !errors.As(err, &ce) || ce.Code != "HOST_PATH_DENIED" || ce.Details["path"] != "linkdir/secret" {
		t.Errorf("hashing through a link out: %v", err)
	}
	if strings.Contains(h.String(), canary) {
		t.Error("the canary was hashed")
	}
	testutil.WriteFile(t, filepath.Join(root, "compose.yaml"),
		"services:\n  web:\n    image: busybox\n    volumes:\n      - ./linkdir/secret:/secret\n")
	_, err = LoadProject(context.Background(), guest.LoadOptions{Root: root,
		Compose: spec.Compose{Files: []string{"compose.yaml"}}, Sandbox: "x"})
	// The path check refuses it first, at its position, before anything is loaded or hashed.
	if coded.Of(err, coded.Unknown).Code != coded.ConfigInvalid || !strings.Contains(err.Error(), "compose.yaml:5:9") ||
		strings.Contains(err.Error(), canary) {
		t.Errorf("loading a bind source through a link out: %v", err)
	}
}
