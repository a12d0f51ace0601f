package testutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// NPMCI installs dir's committed package-lock.json with `npm ci` and returns the folder to
// run node in: a copy of dir's files beside a node_modules of the install, outside the checkout
// in the user's cache. Nothing is written into the checkout, so a fresh clone neither installs
// again nor changes a file a test reads (go test's cache keys a test's result on the files it
// opened; a note written into a lock in testdata made every run of escape "too new" to cache).
// An install is named by the hash of package.json and package-lock.json, and done once; the
// copy of the other files (the clients' scripts: node finds node_modules beside them) by the
// hash of them all. Test binaries of several packages may ask at once: a file lock beside the
// installs serialises them across processes.
func NPMCI(t testing.TB, dir, marker string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is required for the npm-based tests (.ci/run installs it)")
	}
	_ = os.Getenv("SBF_NODE_VERSION") // make test's: read, a new node is in go test's key
	files, err := npmSources(dir)
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
	leftovers, _ := filepath.Glob(filepath.Join(root, ".new-*")) // of a run killed meanwhile: the lock is ours
	for _, l := range leftovers {
		os.RemoveAll(l)
	}
	pkg := map[string][]byte{"package.json": files["package.json"], "package-lock.json": files["package-lock.json"]}
	installed := filepath.Join(root, filepath.Base(dir)+"-"+digest(pkg))
	if _, err := os.Stat(filepath.Join(installed, marker)); err != nil {
		if err := intoPlace(root, installed, pkg, func(tmp string) error {
			c := exec.Command("npm", "ci", "--no-audit", "--no-fund")
			c.Dir = tmp
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("%w\n%s", err, out)
			}
			return nil
		}); err != nil {
			t.Fatalf("npm ci of %s: %v", dir, err)
		}
	}
	if len(files) == len(pkg) {
		return installed
	}
	scripts := filepath.Join(root, filepath.Base(dir)+"-"+digest(files))
	if _, err := os.Stat(scripts); err == nil {
		return scripts
	}
	if err := intoPlace(root, scripts, files, func(tmp string) error {
		return os.Symlink(filepath.Join(installed, "node_modules"), filepath.Join(tmp, "node_modules"))
	}); err != nil {
		t.Fatalf("copying %s beside its install: %v", dir, err)
	}
	return scripts
}

// npmSources reads dir's files (not node_modules, nor what git ignores there: dotfiles).
func npmSources(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// digest is 16 hex digits of the hash of files' names and contents.
func digest(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s %d\n", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// intoPlace writes files into a new folder under root, lets finish complete it, and renames it
// to dest, so a folder under dest's name is always whole.
func intoPlace(root, dest string, files map[string][]byte, finish func(tmp string) error) error {
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := finish(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(dest); err != nil { // an older, incomplete one
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would keep other users out
		return err
	}
	return os.Rename(tmp, dest)
}
