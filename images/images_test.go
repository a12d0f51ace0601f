package images

import (
	"bytes"
	"context"
	"errors"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// fakeRecipe is a recipe that builds in milliseconds and, like mkfs.ext4,
// chatters on stdout. It counts its runs in runs.log.
func fakeRecipe(t *testing.T, body string) (dir string, recipe Recipe) {
	t.Helper()
	dir = t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tiny"), 0o755)
	script := `set -e
out=$1
echo "Creating regular file /etc/passwd"
echo run >> "` + filepath.Join(dir, "runs.log") + `"
` + body + `
mkdir -p "$out"
echo kernel > "$out/vmlinuz"; echo initrd > "$out/initrd.img"; echo disk > "$out/disk.ext4"
`
	os.WriteFile(filepath.Join(dir, "tiny", "build.sh"), []byte(script), 0o644)
	os.WriteFile(filepath.Join(dir, "tiny", "recipe.json"),
		[]byte(`{"kernel_cmdline": "root=/dev/vda", "arches": ["x86_64"], "needs_root": false}`), 0o644)
	recipes, err := Recipes(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return dir, recipes["tiny"]
}

func builder(cache string, progress *bytes.Buffer) Builder {
	return Builder{Cache: Cache{Dirs: []string{cache}}, Euid: 1000, Progress: progress,
		Clock: clock.Fixed{T: time.Unix(0, 0)}}
}

func runs(t *testing.T, dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
	return strings.Count(string(b), "run")
}

func TestBuildCachesByRecipeHash(t *testing.T) {
	dir, r := fakeRecipe(t, "")
	cache := t.TempDir()
	var progress bytes.Buffer
	im, err := builder(cache, &progress).Build(context.Background(), r, "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	if im.KernelCmdline != "root=/dev/vda" || filepath.Dir(im.Dir) != cache ||
		!strings.HasPrefix(filepath.Base(im.Dir), "tiny-") {
		t.Errorf("image = %+v", im)
	}
	if !strings.Contains(progress.String(), "Creating regular file") {
		t.Errorf("the recipe's stdout did not reach the progress output: %q", progress.String())
	}
	again, err := builder(cache, &progress).Build(context.Background(), r, "x86_64")
	if err != nil || again.Dir != im.Dir || runs(t, dir) != 1 {
		t.Fatalf("second build: %+v, %v, runs %d", again, err, runs(t, dir))
	}
	// A changed recipe is a new image; the old one is removed.
	os.WriteFile(filepath.Join(dir, "tiny", "extra.cfg"), []byte("x"), 0o644)
	recipes, _ := Recipes(os.DirFS(dir))
	changed, err := builder(cache, &progress).Build(context.Background(), recipes["tiny"], "x86_64")
	if err != nil || changed.Dir == im.Dir || runs(t, dir) != 2 {
		t.Fatalf("changed recipe: %+v, %v", changed, err)
	}
	if _, err := os.Stat(im.Dir); !os.IsNotExist(err) {
		t.Errorf("the old image is still there: %v", err)
	}
}

func TestFailedBuildLeavesNoImage(t *testing.T) {
	_, r := fakeRecipe(t, "echo broken >&2; exit 3")
	cache := t.TempDir()
	var progress bytes.Buffer
	_, err := builder(cache, &progress).Build(context.Background(), r, "x86_64")
	if err == nil || !strings.Contains(err.Error(), "recipe failed") {
		t.Fatalf("err = %v", err)
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if e.Name() != ".lock" && e.Name() != ".lock.info" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if _, err := (Cache{Dirs: []string{cache}}).Lookup(r, "x86_64"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("lookup after a failed build: %v", err)
	}
}

func TestBuildRefusesWhatItCannotDo(t *testing.T) {
	_, r := fakeRecipe(t, "")
	var progress bytes.Buffer
	b := builder(t.TempDir(), &progress)
	if _, err := b.Build(context.Background(), r, "aarch64"); err == nil ||
		!strings.Contains(err.Error(), "x86_64 only") {
		t.Errorf("other arch: %v", err)
	}
	r.NeedsRoot = true
	var nr *NeedsRootError
	if _, err := b.Build(context.Background(), r, "x86_64"); !errors.As(err, &nr) ||
		!strings.Contains(err.Error(), "sudo sbf image build tiny") {
		t.Errorf("not root: %v", err)
	}
}

// Lookup searches every cache folder: an image root built in the host's
// cache is found by a user whose own cache is empty.
func TestLookupSearchesEveryFolder(t *testing.T) {
	_, r := fakeRecipe(t, "")
	system := t.TempDir()
	var progress bytes.Buffer
	built, err := builder(system, &progress).Build(context.Background(), r, "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	found, err := Cache{Dirs: []string{t.TempDir(), system}}.Lookup(r, "x86_64")
	if err != nil || found.Dir != built.Dir {
		t.Fatalf("lookup = %+v, %v", found, err)
	}
	os.Truncate(built.Disk, 0)
	if _, err := (Cache{Dirs: []string{system}}).Lookup(r, "x86_64"); err == nil {
		t.Error("an image with an empty disk was found")
	}
}

func TestBuiltInRecipes(t *testing.T) {
	recipes, err := Recipes(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := recipes["debian-12"]
	if !ok || !r.NeedsRoot || !strings.Contains(r.KernelCmdline, "root=/dev/vda") || !r.Supports("x86_64") {
		t.Fatalf("debian-12 = %+v", r)
	}
	k1, _ := r.Key("x86_64")
	k2, _ := r.Key("aarch64")
	if len(k1) != 16 || k1 == k2 {
		t.Errorf("keys %q %q", k1, k2)
	}
	if got := Names(recipes); len(got) == 0 || got[0] != "sbf:debian-12" {
		t.Errorf("names = %v", got)
	}
	if n, ok := NameOf("sbf:debian-12"); !ok || n != "debian-12" {
		t.Errorf("NameOf = %q %v", n, ok)
	}
}

func TestDefaultCache(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if c := DefaultCache(get, 1000); len(c.Dirs) != 2 || c.Dirs[0] != "/home/u/.cache/sandboxforge/images" ||
		c.Dirs[1] != SystemCacheDir {
		t.Errorf("user: %v", c.Dirs)
	}
	if c := DefaultCache(get, 0); len(c.Dirs) != 1 || c.Dirs[0] != SystemCacheDir {
		t.Errorf("root: %v", c.Dirs)
	}
	env["SBF_IMAGE_CACHE"] = "/tmp/c"
	if c := DefaultCache(get, 1000); len(c.Dirs) != 1 || c.Dirs[0] != "/tmp/c" {
		t.Errorf("override: %v", c.Dirs)
	}
}

// A recipe silent for longer than HeartbeatEvery still shows progress: a
// line per HeartbeatEvery with the time so far.
func TestBuildHeartbeat(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	_, r := fakeRecipe(t, `while [ ! -e "`+gate+`" ]; do sleep 0.01; done`)
	fake := clock.NewFake(time.Unix(0, 0))
	var progress testutil.SyncBuffer
	b := Builder{Cache: Cache{Dirs: []string{t.TempDir()}}, Euid: 1000, Progress: &progress, Clock: fake}
	done := make(chan error, 1)
	go func() {
		_, err := b.Build(context.Background(), r, "x86_64")
		done <- err
	}()
	for i := 0; !strings.Contains(progress.String(), "sbf: still building sbf:tiny (30s)"); i++ {
		if i == 2000 {
			os.WriteFile(gate, nil, 0o644)
			<-done
			t.Fatalf("no heartbeat after two ticks: %q", progress.String())
		}
		if fake.Waiters() > 0 {
			fake.Advance(HeartbeatEvery)
		}
		time.Sleep(5 * time.Millisecond)
	}
	os.WriteFile(gate, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "sbf: still building sbf:tiny (15s)\n") {
		t.Errorf("progress: %q", progress.String())
	}
}

// A build that finds another sbf building in the same cache says whom it
// waits for at once (the wait repeats it at every beat: internal/flock).
func TestBuildSaysWhomItWaitsFor(t *testing.T) {
	_, r := fakeRecipe(t, "true")
	dir := t.TempDir()
	held, err := flock.Acquire(context.Background(), ownfile.PathFile(filepath.Join(dir, ".lock")),
		flock.Holder{Command: "sbf image build", PID: 41, Since: time.Unix(0, 0)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var progress testutil.SyncBuffer
	b := Builder{Cache: Cache{Dirs: []string{dir}}, Euid: 1000, Progress: &progress, Clock: clock.NewFake(time.Unix(0, 0)),
		LockTimeout: time.Hour}
	done := make(chan error, 1)
	go func() {
		_, err := b.Build(context.Background(), r, "x86_64")
		done <- err
	}()
	want := `sbf: waiting for "sbf image build" (pid 41, since 1970-01-01T00:00:00Z) to finish with the image cache ` + dir
	for i := 0; !strings.Contains(progress.String(), want); i++ {
		if i == 6000 { // a guard against a hang, not a measure of speed
			held.Release()
			<-done
			t.Fatalf("progress: %q", progress.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	held.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
