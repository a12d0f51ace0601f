package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// manifestName is the guest file that remembers what the last sync sent:
// a path → content hash map, so a re-sync sends only what changed.
const manifestName = ".sbf-sync.json"

// SyncReport says what a sync did.
type SyncReport struct {
	LocalPath    string   `json:"local_path"`
	RemotePath   string   `json:"remote_path"`
	ArchiveBytes int64    `json:"archive_bytes"`
	Exclude      []string `json:"exclude"`
	Sent         int      `json:"files_sent"`
	Unchanged    int      `json:"files_unchanged"`
	Deleted      int      `json:"files_deleted"`
	// Unnamable are paths whose names are not UTF-8 (escaped): the
	// manifest cannot name them, so they are left out, not sent.
	Unnamable []string `json:"unnamable_paths,omitempty"`
	Status    string   `json:"status"`
}

// SyncExcludes are SandboxForge v1's: the given patterns (else [sync]
// exclude_patterns), plus .git unless [sync] include_git.
func (t *Target) SyncExcludes(given []string) []string {
	ex := given
	if ex == nil {
		ex = t.Resolved.Config.Sync.ExcludePatterns
	}
	ex = slices.Clone(ex)
	if !t.Resolved.Config.Sync.IncludeGit && !slices.Contains(ex, ".git") {
		ex = append(ex, ".git")
	}
	return ex
}

// Sync makes a guest folder hold what a host folder holds, minus the
// excluded paths (fnmatch patterns tried on each path and its last
// element, as v1 did). Only files whose content changed since the last
// sync are sent; files gone from the host are deleted in the guest.
func (t *Target) Sync(
	ctx context.Context,
	policy hostpath.Policy,
	base, localPath, remotePath string,
	exclude []string,
) (SyncReport, error) {
	rep := SyncReport{LocalPath: localPath, RemotePath: remotePath, Exclude: exclude, Status: "ok"}
	a, err := t.archiver()
	if err != nil {
		return rep, err
	}
	place, err := policy.Confine(base, localPath)
	if err != nil {
		return rep, err
	}
	defer place.Close()
	src := filepath.ToSlash(place.Rel)
	if info, err := place.Root.Stat(src); err != nil || !info.IsDir() {
		return rep, coded.New(
			coded.BackendCommand,
			map[string]any{"local_path": localPath},
			"local path does not exist or is not a folder: %s",
			localPath,
		)
	}
	now, unnamable, err := hashTree(place.Root, src, excluder(exclude))
	if err != nil {
		return rep, err
	}
	rep.Unnamable = unnamable
	before := t.remoteManifest(ctx, a, remotePath)
	var send, gone []string
	for p, h := range now {
		if before[p] != h {
			send = append(send, p)
		}
	}
	for p := range before {
		if _, kept := now[p]; !kept {
			gone = append(gone, p)
		}
	}
	slices.Sort(send)
	slices.Sort(gone)
	rep.Sent, rep.Unchanged, rep.Deleted = len(send), len(now)-len(send), len(gone)
	if err := t.deleteRemote(ctx, remotePath, gone); err != nil {
		return rep, err
	}
	manifest, _ := json.Marshal(now)
	counter := &countingWriter{}
	err = t.put(ctx, a, remotePath, func(w io.Writer) error {
		return writeSelected(io.MultiWriter(w, counter), place.Root, src, send, manifest)
	})
	rep.ArchiveBytes = counter.n
	return rep, err
}

// hashTree maps every file and link below src (not excluded) to a hash of
// its content or target; names that are not UTF-8 are left out and listed
// (escaped) instead: the manifest is JSON, which cannot hold them.
func hashTree(root *os.Root, src string, excluded func(rel string) bool) (map[string]string, []string, error) {
	out := map[string]string{}
	var unnamable []string
	err := sshexec.WalkRoot(root, src, func(p string, info fs.FileInfo) error {
		rel, err := hostpath.Below(src, p)
		if err != nil || rel == "" {
			return err
		}
		skip := func() error {
			if info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(rel) {
			unnamable = append(unnamable, strconv.QuoteToASCII(rel))
			return skip()
		}
		if excluded(rel) {
			return skip()
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		case info.Mode().IsRegular():
			sum, err := hashFile(root, p)
			if err != nil {
				return err
			}
			out[rel] = sum
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", src, err)
	}
	return out, unnamable, nil
}

func hashFile(root *os.Root, p string) (string, error) {
	f, err := root.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSelected archives the listed paths (relative to src) and the new
// manifest, entries named relative to the guest folder.
func writeSelected(w io.Writer, root *os.Root, src string, rels []string, manifest []byte) error {
	tw := tar.NewWriter(w)
	for _, rel := range rels {
		p := path.Join(src, rel)
		info, err := root.Lstat(p)
		if err != nil {
			return err
		}
		if err := sshexec.AddToTar(tw, root, p, rel, info); err != nil {
			return err
		}
	}
	hdr := &tar.Header{Name: manifestName, Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	return tw.Close()
}

// remoteManifest reads what the last sync sent (nothing when there was
// none, or it cannot be read: then everything is sent).
func (t *Target) remoteManifest(ctx context.Context, a drivers.ArchiveCopier, remotePath string) map[string]string {
	out := map[string]string{}
	// The guest may have made the manifest as large as it likes: past the
	// bound the copy stops, and everything is sent.
	archive := &boundedWriter{max: maxManifest + 64<<10}
	if err := a.GetArchive(ctx, t.Instance, path.Join(remotePath, manifestName), archive); err != nil {
		return out
	}
	tr := tar.NewReader(archive.reader())
	if hdr, err := tr.Next(); err == nil && path.Base(hdr.Name) == manifestName {
		b, _ := io.ReadAll(io.LimitReader(tr, maxManifest))
		json.Unmarshal(b, &out)
	}
	return out
}

// maxManifest bounds the sync manifest read back from a guest.
const maxManifest = 64 << 20

// boundedWriter keeps what is written until it would pass max, then
// refuses the write, which ends the copy feeding it. It keeps chunks as
// they come, so it holds what it was given and never copies it.
type boundedWriter struct {
	chunks [][]byte
	size   int
	max    int
}

var errTooLarge = errors.New("larger than sbf reads back")

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.size+len(p) > w.max {
		return 0, errTooLarge
	}
	w.chunks = append(w.chunks, slices.Clone(p))
	w.size += len(p)
	return len(p), nil
}

// reader reads back what was kept.
func (w *boundedWriter) reader() io.Reader {
	readers := make([]io.Reader, len(w.chunks))
	for i, c := range w.chunks {
		readers[i] = bytes.NewReader(c)
	}
	return io.MultiReader(readers...)
}

// deleteRemote removes files the host no longer has: through the backend
// when it can (the sim, whose guest paths are not the paths its commands
// see), else with rm in the guest.
func (t *Target) deleteRemote(ctx context.Context, remotePath string, rels []string) error {
	if len(rels) == 0 {
		return nil
	}
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	if r := drivers.CapabilitiesOf(drv).Remove; r != nil {
		var paths []string
		for _, rel := range rels {
			paths = append(paths, path.Join(remotePath, rel))
		}
		return r.Remove(ctx, t.Instance, paths)
	}
	for len(rels) > 0 {
		n := min(len(rels), 200)
		cmd := "cd " + shellquote.Quote(remotePath) + " && rm -f --"
		for _, rel := range rels[:n] {
			cmd += " " + shellquote.Quote(rel)
		}
		res, err := t.Exec(ctx, drivers.ExecRequest{Command: cmd})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("deleting files the host no longer has in %s: %s", remotePath, res.Stderr)
		}
		rels = rels[n:]
	}
	return nil
}

// excluder matches a relative path, or its last element, against fnmatch
// patterns (where * also matches /, as Python's fnmatch does).
func excluder(patterns []string) func(string) bool {
	var res []*regexp.Regexp
	for _, p := range patterns {
		res = append(res, fnmatchRE(p))
	}
	return func(rel string) bool {
		for _, re := range res {
			if re.MatchString(rel) || re.MatchString(path.Base(rel)) {
				return true
			}
		}
		return false
	}
}

func fnmatchRE(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			if j := strings.IndexByte(pattern[i+1:], ']'); j >= 0 {
				class := pattern[i+1 : i+1+j]
				if strings.HasPrefix(class, "!") {
					class = "^" + class[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
				i += j + 1
				continue
			}
			b.WriteString(`\[`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile("^" + regexp.QuoteMeta(pattern) + "$")
	}
	return re
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
