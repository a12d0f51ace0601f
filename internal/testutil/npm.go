package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// NPMCI installs dir's committed package-lock.json with `npm ci` unless the
// file marker (relative to dir) already exists. Test binaries of several
// packages share one folder and go test runs them at once; `npm ci` first
// deletes node_modules, so an unlocked install breaks the other package's
// running client. The file lock serialises installs across processes.
func NPMCI(t testing.TB, dir, marker string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is required for the npm-based tests (.ci/run installs it)")
	}
	lock, err := flock.Acquire(context.Background(), ownfile.At(dir).File(".npm-ci.lock"),
		flock.Holder{Command: "npm ci (" + t.Name() + ")", PID: os.Getpid()}, 10*time.Minute)
	if err != nil {
		t.Fatalf("waiting for another test's npm ci in %s: %v", dir, err)
	}
	defer func() { _ = lock.Release() }()
	if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
		return
	}
	c := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}
