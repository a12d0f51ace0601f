package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/gitstate"
	"github.com/sandboxforge/sbf/internal/rootfs"
	"github.com/sandboxforge/sbf/spec"
)

// WorkspaceState is what docker_build keys its image cache on and what
// validate_image compares an image's labels with, read from the host
// workspace as SandboxForge v1 read it (its workspace_state).
type WorkspaceState struct {
	GitCommit        *string `json:"git_commit"`
	GitShort         *string `json:"git_short"`
	GitBranch        string  `json:"git_branch"` // "detached" when HEAD is on no branch or git cannot say
	GitDirty         bool    `json:"git_dirty"`
	DependenciesHash *string `json:"dependencies_hash"`
	DockerfileHash   *string `json:"dockerfile_hash"`
	ContentHash      string  `json:"content_hash"`
	BuildTimestamp   string  `json:"build_timestamp"`
	// GitUnread says why the git state was left unread when a bound
	// stopped the read (GIT_LIMIT_EXCEEDED: an object inflating past it).
	GitUnread string `json:"git_unread,omitempty"`
}

// gitTimeout bounds reading the repository; past it git "cannot say"
// (no commit, clean, nothing tracked), as when the git command failed.
const gitTimeout = 10 * time.Second

// ReadWorkspaceState reads the workspace's git state and hashes its
// dependency files ([build.staleness_detection] check_dependencies) and
// Dockerfile, then derives the content hash the cache strategy asks for.
// A folder that is not a git repository reads as "nogit", never fails.
// Git is never run: the workspace may hold what a guest wrote, and a
// repository's config can make git run commands (internal/gitstate).
func ReadWorkspaceState(ctx context.Context, root string, b spec.Build, now time.Time) WorkspaceState {
	st := WorkspaceState{GitBranch: "detached", BuildTimestamp: now.UTC().Truncate(time.Second).Format(time.RFC3339)}
	g, unread := readGit(ctx, root)
	st.GitUnread = unread
	if g.Commit != "" {
		commit := g.Commit
		st.GitCommit, st.GitShort = &commit, opt(commit[:min(8, len(commit))])
	}
	if g.Branch != "" {
		st.GitBranch = g.Branch
	}
	st.GitDirty = g.Dirty
	fsys, closeFS := openWorkspace(root)
	defer closeFS()
	st.DependenciesHash = hashPatterns(fsys, b.StalenessDetection.CheckDeps)
	if b.StalenessDetection.CheckDockerfile {
		st.DockerfileHash = hashPatterns(fsys, []string{"Dockerfile"})
	}
	st.ContentHash = contentHash(fsys, b.ImageCaching.Strategy, st, g.Tracked)
	return st
}

// readGit reads what git would say, within gitTimeout. A part it could
// not read stays empty: no repository, an unreadable index or object, or
// the time running out all mean git cannot say. A read stopped at one of
// gitstate's bounds is said too (unread: the coded reason), and then
// nothing of it is used.
func readGit(ctx context.Context, root string) (st gitstate.State, unread string) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	st, err := gitstate.Read(ctx, root)
	var limit *gitstate.LimitError
	if errors.As(err, &limit) {
		c := limit.Coded()
		return gitstate.State{}, c.Code + ": " + c.Message
	}
	return st, ""
}

// contentHash is the cache key of a strategy: git_commit is the commit,
// content_hash also covers every tracked file, smart (the default) is the
// short commit, dependencies, Dockerfile and dirtiness.
func contentHash(fsys fs.FS, strategy string, st WorkspaceState, tracked []string) string {
	switch strategy {
	case "git_commit":
		return or(st.GitCommit, "nogit")
	case "content_hash":
		dirty := "clean"
		if st.GitDirty {
			dirty = "dirty"
		}
		return sha256Hex(strings.Join([]string{or(st.GitCommit, "nogit"), dirty, or(st.DependenciesHash, "nodeps"),
			or(st.DockerfileHash, "nodockerfile"), or(hashFiles(fsys, tracked), "notracked")}, "|"))
	}
	dirty := "clean"
	if st.GitDirty {
		dirty = "dirty"
	}
	return sha256Hex(strings.Join([]string{or(st.GitShort, "nogit"), or(st.DependenciesHash, "nodeps"),
		or(st.DockerfileHash, "nodockerfile"), dirty}, "|"))
}

// openWorkspace reads the workspace through an os.Root, so a symlink
// cannot lead the hashing out of it, and a FIFO cannot hold it.
func openWorkspace(root string) (fs.FS, func()) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return emptyFS{}, func() {}
	}
	return rootfs.ReadFS(r), func() { r.Close() }
}

type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// hashPatterns hashes the files matching each glob pattern (in pattern
// order, each pattern's matches sorted by path parts, as v1's pathlib
// did): sha256 over "path:sha256" lines; nil when nothing matches.
func hashPatterns(fsys fs.FS, patterns []string) *string {
	var files []string
	for _, p := range patterns {
		files = append(files, globFiles(fsys, p)...)
	}
	return hashFiles(fsys, files)
}

func hashFiles(fsys fs.FS, files []string) *string {
	var lines []string
	for _, f := range files {
		if sum, ok := fileSHA256(fsys, f); ok {
			lines = append(lines, f+":"+sum)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return opt(sha256Hex(strings.Join(lines, "\n")))
}

func fileSHA256(fsys fs.FS, name string) (string, bool) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// globFiles lists the regular files a pattern matches, relative to the
// workspace: path.Match per segment, and ** for any number of folders.
func globFiles(fsys fs.FS, pattern string) []string {
	pattern = strings.Trim(path.Clean(strings.ReplaceAll(pattern, "\\", "/")), "/")
	if !fs.ValidPath(pattern) || pattern == "." {
		return nil
	}
	want := strings.Split(pattern, "/")
	var out []string
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		segs := strings.Split(p, "/")
		if d.IsDir() {
			if !prefixCanMatch(want, segs) {
				return fs.SkipDir
			}
			return nil
		}
		if matchSegments(want, segs) {
			out = append(out, p)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b string) int { return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/")) })
	return out
}

// matchSegments matches a path against pattern segments; ** matches zero
// or more folders, never the file itself.
func matchSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i < len(segs); i++ {
			if matchSegments(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], segs[0])
	return err == nil && ok && matchSegments(pat[1:], segs[1:])
}

// prefixCanMatch says whether a folder could hold a match, so the walk
// skips the rest of the tree.
func prefixCanMatch(pat, dir []string) bool {
	for i, seg := range dir {
		if i >= len(pat) {
			return false
		}
		if pat[i] == "**" {
			return true
		}
		if ok, err := path.Match(pat[i], seg); err != nil || !ok {
			return false
		}
	}
	return true
}

// ExpectedImageTag renders [build.image_caching] tag_format for an image:
// {image} is its repository (a registry port is not a tag), the hashes are
// cut to 12 characters, and a result without a tag gets the repository
// prepended.
func ExpectedImageTag(image, tagFormat string, st WorkspaceState) string {
	repo, _ := splitImage(image)
	out := strings.NewReplacer(
		"{image}", repo,
		"{git_short}", cut(or(st.GitShort, "nogit"), 12),
		"{deps_hash}", cut(or(st.DependenciesHash, "nodeps"), 12),
		"{content_hash}", cut(nonEmpty(st.ContentHash, "nocontent"), 12),
	).Replace(tagFormat)
	if !strings.Contains(out, ":") {
		out = repo + ":" + out
	}
	return out
}

// splitImage separates repository and tag; in host:port/name the colon
// belongs to the registry.
func splitImage(image string) (repo, tag string) {
	v := strings.TrimSpace(image)
	i := strings.LastIndex(v, ":")
	if i < 0 || i < strings.LastIndex(v, "/") {
		return v, ""
	}
	return v[:i], v[i+1:]
}

func opt(s string) *string { return &s }

func or(p *string, def string) string {
	if p == nil || *p == "" {
		return def
	}
	return *p
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cut(s string, n int) string { return s[:min(n, len(s))] }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
