package testutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// NPMCI installs dir's committed package-lock.json with `npm ci` and returns the folder to
// run node in: a copy of dir's files with node_modules beside them, outside the checkout in
// the user's cache, named by the hash of what it copied. Nothing is written into the
// checkout, so a fresh clone neither installs again nor changes a file a test reads (go
// test's cache keys a test's result on the files it opened; a note written into a lock in
// testdata made every run of escape "too new" to cache). Test binaries of several packages
// may ask at once: a file lock beside the copies serialises installs across processes.
func NPMCI(t testing.TB, dir, marker string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is required for the npm-based tests (.ci/run installs it)")
	}
	files, sum, err := npmSources(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("finding the cache for npm installs: %v", err)
	}
	root := filepath.Join(cache, "sandboxforge", "npm")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := flock.Acquire(context.Background(), ownfile.At(root).File(".lock"),
		flock.Holder{Command: "npm ci (" + t.Name() + ")", PID: os.Getpid()}, 10*time.Minute)
	if err != nil {
		t.Fatalf("waiting for another test's npm ci in %s: %v", root, err)
	}
	defer func() { _ = lock.Release() }()
	installed := filepath.Join(root, filepath.Base(dir)+"-"+sum)
	if _, err := os.Stat(filepath.Join(installed, marker)); err == nil {
		return installed
	}
	if err := npmInstall(root, installed, files); err != nil {
		t.Fatalf("npm ci of %s: %v", dir, err)
	}
	return installed
}

// npmSources reads dir's files (not node_modules, nor what git ignores there: dotfiles) and
// hashes their names and contents.
func npmSources(dir string) (map[string][]byte, string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	files, h := map[string][]byte{}, sha256.New()
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, "", err
		}
		files[e.Name()] = data
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(data))
		h.Write(data)
	}
	return files, hex.EncodeToString(h.Sum(nil))[:16], nil
}

// npmInstall writes files into a new folder beside installed, runs npm ci there and renames
// it into place, so a folder under the final name is always complete.
func npmInstall(root, installed string, files map[string][]byte) error {
	tmp, err := os.MkdirTemp(root, ".installing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return err
		}
	}
	c := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	c.Dir = tmp
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	if err := os.RemoveAll(installed); err != nil { // an older, incomplete one
		return err
	}
	return os.Rename(tmp, installed)
}
