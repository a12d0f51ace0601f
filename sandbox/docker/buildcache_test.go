package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
	"github.com/sandboxforge/sbf/spec"
)

func TestExpectedImageTag(t *testing.T) {
	full := WorkspaceState{GitShort: opt("0123abcd"), DependenciesHash: opt("d1d2d3d4d5d6d7d8"),
		ContentHash: "c1c2c3c4c5c6c7c8"}
	for _, tc := range []struct{ image, format, want string }{
		{"repo/app:dev", "{image}:{git_short}-{deps_hash}", "repo/app:0123abcd-d1d2d3d4d5d6"},
		{"repo/app", "{image}:{content_hash}", "repo/app:c1c2c3c4c5c6"},
		{"localhost:5000/app", "{image}:{git_short}", "localhost:5000/app:0123abcd"},
		{"localhost:5000/app:1", "{image}:{git_short}", "localhost:5000/app:0123abcd"},
		{"repo/app:dev", "cache-{git_short}", "repo/app:cache-0123abcd"},
	} {
		if got := ExpectedImageTag(tc.image, tc.format, full); got != tc.want {
			t.Errorf("%s with %s = %s, want %s", tc.image, tc.format, got, tc.want)
		}
	}
	if got := ExpectedImageTag("app", "{image}:{git_short}-{deps_hash}", WorkspaceState{}); got != "app:nogit-nodeps" {
		t.Errorf("outside git: %s", got)
	}
}

func TestGlobFilesFollowsPathlib(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"pyproject.toml", "uv.lock", "a/uv.lock", "a-b/uv.lock", "a/b/c.lock", "req1.txt",
		"sub/pyproject.toml"} {
		testutil.WriteFile(t, filepath.Join(root, f), f)
	}
	os.Symlink("/etc/passwd", filepath.Join(root, "leak.lock"))
	fsys, done := openWorkspace(root)
	defer done()
	for pattern, want := range map[string][]string{
		"pyproject.toml": {"pyproject.toml"},
		"req?.txt":       {"req1.txt"},
		"**/*.lock":      {"a/b/c.lock", "a/uv.lock", "a-b/uv.lock", "leak.lock", "uv.lock"},
		// sorted by parts, as pathlib sorts
		"a/**":          nil, // ** matches folders only
		"../etc/passwd": nil,
		"/etc/passwd":   {}, // cleaned to a workspace path that does not exist
	} {
		if got := globFiles(fsys, pattern); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("glob %q = %v, want %v", pattern, got, want)
		}
	}
	// v1's payload: sha256 of "path:sha256" lines, pattern by pattern.
	got := hashPatterns(fsys, []string{"uv.lock", "pyproject.toml", "*.lock"})
	lines := []string{"uv.lock:" + sha256Hex("uv.lock"), "pyproject.toml:" + sha256Hex("pyproject.toml"),
		"uv.lock:" + sha256Hex("uv.lock")}
	if got == nil || *got != sha256Hex(strings.Join(lines, "\n")) {
		t.Errorf("hash = %v (the symlink out must not count)", got)
	}
	if hashPatterns(fsys, []string{"missing.toml"}) != nil {
		t.Error("no match must hash to null")
	}
}

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	testutil.WriteFile(t, filepath.Join(root, "pyproject.toml"), "[project]\n")
	testutil.WriteFile(t, filepath.Join(root, "Dockerfile"), "FROM scratch\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return root
}

func TestWorkspaceStateReadsGit(t *testing.T) {
	root := gitRepo(t)
	b := spec.Defaults(spec.Host{OS: "linux"}).Build
	ctx := context.Background()
	st := ReadWorkspaceState(ctx, root, b, sandboxtest.T0)
	head, _ := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if st.GitCommit == nil || *st.GitCommit != strings.TrimSpace(string(head)) || *st.GitShort != (*st.GitCommit)[:8] ||
		st.GitBranch != "main" || st.GitDirty || st.BuildTimestamp != "2026-11-25T12:00:00Z" {
		t.Fatalf("state: %+v", st)
	}
	if st.DependenciesHash == nil || st.DockerfileHash == nil {
		t.Fatalf("hashes: %+v", st)
	}
	smart := sha256Hex(strings.Join([]string{*st.GitShort, *st.DependenciesHash, *st.DockerfileHash, "clean"}, "|"))
	if st.ContentHash != smart {
		t.Errorf("smart content hash = %s, want %s", st.ContentHash, smart)
	}
	b.ImageCaching.Strategy = "git_commit"
	if got := ReadWorkspaceState(ctx, root, b, sandboxtest.T0).ContentHash; got != *st.GitCommit {
		t.Errorf("git_commit strategy: %s", got)
	}
	b.ImageCaching.Strategy = "content_hash"
	tracked := ReadWorkspaceState(ctx, root, b, sandboxtest.T0).ContentHash
	testutil.WriteFile(t, filepath.Join(root, "pyproject.toml"), "[project]\nname = 'x'\n")
	after := ReadWorkspaceState(ctx, root, b, sandboxtest.T0)
	if !after.GitDirty || after.ContentHash == tracked || *after.DependenciesHash == *st.DependenciesHash {
		t.Errorf("an edit must make the tree dirty and change the hashes: %+v", after)
	}
	outside := ReadWorkspaceState(ctx, t.TempDir(), spec.Defaults(spec.Host{}).Build, sandboxtest.T0)
	if outside.GitCommit != nil || outside.GitBranch != "detached" || outside.DependenciesHash != nil ||
		outside.ContentHash != sha256Hex("nogit|nodeps|nodockerfile|clean") {
		t.Errorf("not a repository: %+v", outside)
	}
}

func TestJudgeImage(t *testing.T) {
	b := spec.Defaults(spec.Host{}).Build
	st := WorkspaceState{GitCommit: opt("c0ffee"), DependenciesHash: opt("deps0123456789abcdef")}
	good := map[string]string{"git.commit": "c0ffee", "build.dependencies.hash": "deps0123456789abcdef",
		"build.timestamp": "t"}
	age := func(h float64) *float64 { return &h }
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	oci := with("git.commit", "")
	oci["org.opencontainers.image.revision"] = "c0ffee"
	dirty := st
	dirty.GitDirty = true
	checks := DefaultImageChecks(b)
	warnOnly := checks
	warnOnly.GitDirty = "warn"
	failDirty := checks
	failDirty.GitDirty = "fail"
	noAge := checks
	noAge.MaxAgeHours = nil
	for _, tc := range []struct {
		name    string
		meta    *imageMeta
		st      WorkspaceState
		checks  ImageChecks
		valid   bool
		rec     string
		reasons string
	}{
		{"fresh image", &imageMeta{Labels: good, AgeHours: age(1)}, st, checks, true, "reuse", ""},
		{"missing", nil, st, checks, false, "build", "image_missing: app:x"},
		{"other commit", &imageMeta{Labels: with("git.commit", "beef"), AgeHours: age(1)}, st, checks, false, "rebuild",
			"git_commit_mismatch: image=beef, workspace=c0ffee"},
		{"no commit label", &imageMeta{Labels: with("git.commit", ""), AgeHours: age(1)}, st, checks, false, "rebuild",
			"git_commit_missing_in_image_labels"},
		{"OCI revision counts", &imageMeta{Labels: oci, AgeHours: age(1)}, st, checks, true, "reuse", ""},
		{"dependencies moved", &imageMeta{Labels: with("build.dependencies.hash", "otherdeps9876543210"),
			AgeHours: age(1)}, st, checks, false, "rebuild",
			"dependencies_changed: image=otherdeps987, workspace=deps01234567"},
		{"too old", &imageMeta{Labels: good, AgeHours: age(30.5)}, st, checks, false, "rebuild",
			"image_too_old: age_hours=30.5, threshold_hours=24.0"},
		{"any age", &imageMeta{Labels: good, AgeHours: age(300)}, st, noAge, true, "reuse", ""},
		{"dirty tree", &imageMeta{Labels: good, AgeHours: age(1)}, dirty, checks, false, "rebuild",
			"workspace_has_uncommitted_changes"},
		{"dirty tree, warn", &imageMeta{Labels: good, AgeHours: age(1)}, dirty, warnOnly, true, "warn", ""},
		{"dirty tree, fail", &imageMeta{Labels: good, AgeHours: age(1)}, dirty, failDirty, false, "fail",
			"workspace_has_uncommitted_changes"},
	} {
		v := judgeImage("app:x", tc.meta, tc.st, b, tc.checks)
		if v.Valid != tc.valid || v.Recommendation != tc.rec || strings.Join(v.Reasons, "; ") != tc.reasons {
			t.Errorf("%s: valid %v, %s, reasons %q", tc.name, v.Valid, v.Recommendation, v.Reasons)
		}
	}
	b.Prebuilt.StalenessCheck.OnStale = "fail"
	if v := judgeImage("app:x", &imageMeta{Labels: with("git.commit", "beef")}, st, b,
		checks); v.Recommendation != "fail" {
		t.Errorf("on_stale = fail: %s", v.Recommendation)
	}
}

// The build-cache state never runs git: neither bare-repository files a
// guest synced to the workspace root nor a .git config whose
// core.fsmonitor names a command make anything run.
func TestWorkspaceStateRunsNothingFromTheRepository(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	plant := func(dir string) {
		gitIn(dir, "config", "core.bare", "false")
		gitIn(dir, "config", "core.worktree", ".")
		gitIn(dir, "config", "core.fsmonitor", "touch '"+marker+"'; echo")
	}
	bare := t.TempDir()
	gitRepo(t) // skips without git
	gitIn(bare, "init", "-q", "--bare")
	plant(bare)
	repo := gitRepo(t)
	plant(filepath.Join(repo, ".git"))
	b := spec.Defaults(spec.Host{OS: "linux"}).Build
	b.ImageCaching.Strategy = "content_hash"
	if st := ReadWorkspaceState(context.Background(), bare, b, sandboxtest.T0); st.GitCommit != nil {
		t.Errorf("bare files at the root read as a repository: %+v", st)
	}
	if st := ReadWorkspaceState(context.Background(), repo, b, sandboxtest.T0); st.GitCommit == nil || st.GitDirty {
		t.Errorf("the workspace's own repository: %+v", st)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's core.fsmonitor ran")
	}
}
