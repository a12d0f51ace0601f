package images

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/progress"
)

// Builder makes images into the first folder of a cache.
type Builder struct {
	Cache    Cache
	Euid     int
	Progress io.Writer // the recipe's output, stdout and stderr alike
	Who      flock.Holder
	Clock    clock.Clock // times the build for its progress line
	// LockTimeout bounds the wait for another build of the same cache.
	LockTimeout time.Duration
}

// NeedsRootError says a recipe cannot be built by this user.
type NeedsRootError struct{ Recipe string }

func (e *NeedsRootError) Error() string {
	return fmt.Sprintf("building %s%s needs root (debootstrap, chroot and mounts): run 'sudo sbf image build %s' once; "+
		"every user then finds it in %s", Scheme, e.Recipe, e.Recipe, SystemCacheDir)
}

// Build returns the cached image of r for arch, building it first when
// the cache has none. Concurrent builds of one cache wait for each other.
func (b Builder) Build(ctx context.Context, r Recipe, arch string) (Image, error) {
	if !r.Supports(arch) {
		return Image{}, fmt.Errorf("%s%s is built for %s only, not %s", Scheme, r.Name, strings.Join(r.Arches, ", "), arch)
	}
	if im, err := b.Cache.Lookup(r, arch); err == nil {
		return im, nil
	}
	if r.NeedsRoot && b.Euid != 0 {
		return Image{}, &NeedsRootError{Recipe: r.Name}
	}
	dir := b.Cache.Dirs[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Image{}, fmt.Errorf("creating the image cache: %w", err)
	}
	lockFile := ownfile.At(dir).File(".lock")
	if h := flock.Holding(lockFile); h != nil {
		// The wait itself says so again at every beat (flock), through the
		// context's progress listener.
		fmt.Fprintf(b.Progress, "sbf: waiting for %q (pid %d, since %s) to finish with the image cache %s\n",
			h.Command, h.PID, h.Since.UTC().Format(time.RFC3339), dir)
	}
	lock, err := flock.Acquire(ctx, lockFile, b.Who, b.LockTimeout)
	if err != nil {
		return Image{}, fmt.Errorf("waiting for another image build: %w", err)
	}
	defer lock.Release()
	if im, err := (Cache{Dirs: []string{dir}}).Lookup(r, arch); err == nil {
		return im, nil // built by the build we waited for
	}
	key, err := r.Key(arch)
	if err != nil {
		return Image{}, err
	}
	removeMatching(dir, regexp.MustCompile(`^\.tmp-`+regexp.QuoteMeta(r.Name)+`-`), "") // interrupted builds
	im, err := b.buildInto(ctx, r, arch, key, dir)
	if err != nil {
		return Image{}, err
	}
	removeMatching(dir, regexp.MustCompile(`^`+regexp.QuoteMeta(r.Name)+`-[0-9a-f]{16}$`), filepath.Base(im.Dir))
	return im, nil
}

// buildInto runs the recipe in a temporary folder of dir and renames the
// result into place only when it is complete, so an interrupted build
// never looks like an image.
func (b Builder) buildInto(ctx context.Context, r Recipe, arch, key, dir string) (Image, error) {
	tmp, err := os.MkdirTemp(dir, ".tmp-"+r.Name+"-")
	if err != nil {
		return Image{}, fmt.Errorf("creating a build folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	recipeDir, out := filepath.Join(tmp, "recipe"), filepath.Join(tmp, "out")
	if err := writeRecipe(r.files, recipeDir); err != nil {
		return Image{}, err
	}
	start := b.Clock.Now()
	fmt.Fprintf(
		b.Progress,
		"sbf: building %s%s (%s; %s); its recipe's output follows\n",
		Scheme,
		r.Name,
		arch,
		r.BuildTime,
	)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(recipeDir, "build.sh"), out)
	// The recipe writes progress and tools' chatter (mkfs prints file
	// names on stdout); none of it may reach sbf's stdout.
	progress := &lockedWriter{w: b.Progress}
	cmd.Stdout, cmd.Stderr = progress, progress
	proc.Group(cmd)                                                          // a Ctrl-C is sbf's to handle
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // its trap unmounts
	cmd.WaitDelay = time.Minute
	stop := b.heartbeat(progress, Scheme+r.Name, start)
	err = cmd.Run()
	stop()
	if err != nil {
		return Image{}, fmt.Errorf("building %s%s: recipe failed: %w (its output is above)", Scheme, r.Name, err)
	}
	meta := Image{Name: r.Name, Key: key, Arch: arch, KernelCmdline: r.KernelCmdline}
	if err := writeMeta(out, meta); err != nil {
		return Image{}, err
	}
	final := filepath.Join(dir, folderName(r.Name, key))
	os.RemoveAll(final) // an incomplete folder of the same key
	if err := os.Rename(out, final); err != nil {
		return Image{}, fmt.Errorf("moving the image into the cache: %w", err)
	}
	im, err := readImage(final)
	if err == nil {
		fmt.Fprintf(
			b.Progress,
			"sbf: built %s%s in %s: %s\n",
			Scheme,
			r.Name,
			b.Clock.Now().Sub(start).Round(time.Second),
			final,
		)
	}
	return im, err
}

// writeMeta records what the image is and opens it to every user: images
// root builds are booted by unprivileged users.
func writeMeta(out string, meta Image) error {
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, metaFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing image metadata: %w", err)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return err
	}
	for _, f := range []string{KernelFile, InitrdFile, DiskFile} {
		if err := os.Chmod(filepath.Join(out, f), 0o644); err != nil {
			return fmt.Errorf("the recipe did not produce %s: %w", f, err)
		}
	}
	return nil
}

func writeRecipe(files fs.FS, dst string) error {
	if err := os.CopyFS(dst, files); err != nil {
		return fmt.Errorf("writing the recipe: %w", err)
	}
	return filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sh") {
			return err
		}
		return os.Chmod(p, 0o755) // embedded files lose their mode
	})
}

// removeMatching deletes the entries of dir whose name matches, but keep.
func removeMatching(dir string, re *regexp.Regexp, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != keep && re.MatchString(e.Name()) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// HeartbeatEvery is how often a build says it is still going: a recipe's
// steps (debootstrap, the package installs) are silent for minutes.
const HeartbeatEvery = progress.Every

// heartbeat writes a line every HeartbeatEvery until stop is called.
func (b Builder) heartbeat(w io.Writer, name string, start time.Time) (stop func()) {
	t := b.Clock.NewTicker(HeartbeatEvery)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-t.C():
				fmt.Fprintf(w, "sbf: still building %s (%s)\n", name, b.Clock.Now().Sub(start).Round(time.Second))
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
		<-finished
	}
}

// lockedWriter serialises the recipe's output and the heartbeat's lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
