package gitstate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// gitEnv runs the real git with no config but the test's own.
func gitEnv(t testing.TB) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_OPTIONAL_LOCKS=0", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
}

type gitRunner struct {
	t   testing.TB
	dir string
	env []string
}

func newGit(t testing.TB, dir string) *gitRunner {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	return &gitRunner{t: t, dir: dir, env: gitEnv(t)}
}

// try runs git and says whether it succeeded.
func (g *gitRunner) try(args ...string) (string, bool) {
	cmd := exec.Command("git", append([]string{"-C", g.dir}, args...)...)
	cmd.Env = g.env
	out, err := cmd.Output()
	return string(out), err == nil
}

func (g *gitRunner) run(args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", g.dir}, args...)...)
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// says is what the real git reports, in State's terms.
func (g *gitRunner) says() State {
	var st State
	if out, ok := g.try("rev-parse", "--verify", "-q", "HEAD"); ok {
		st.Commit = strings.TrimSpace(out)
	}
	if out, ok := g.try("rev-parse", "--abbrev-ref", "HEAD"); ok && strings.TrimSpace(out) != "HEAD" {
		st.Branch = strings.TrimSpace(out)
	}
	st.Dirty = strings.TrimSpace(g.run("status", "--porcelain")) != ""
	for _, f := range strings.Split(g.run("ls-files", "-z"), "\x00") {
		if f != "" {
			st.Tracked = append(st.Tracked, f)
		}
	}
	slices.Sort(st.Tracked)
	return st
}

func write(t testing.TB, ws, name, data string) {
	t.Helper()
	testutil.WriteFile(t, filepath.Join(ws, filepath.FromSlash(name)), data)
}

// committed is a repository with one commit: files in folders, a link,
// a .gitignore.
func committed(t *testing.T) (string, *gitRunner) {
	ws := t.TempDir()
	g := newGit(t, ws)
	g.run("init", "-q", "-b", "main")
	write(t, ws, "a.txt", "one\n")
	write(t, ws, "dir/b.txt", "bee\n")
	write(t, ws, "dir/deeper/c.txt", "sea\n")
	write(t, ws, ".gitignore", "*.log\nbuild/\n")
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	g.run("add", ".")
	g.run("commit", "-q", "-m", "one")
	return ws, g
}

func TestReadAgreesWithGit(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, ws string, g *gitRunner)
	}{
		{"clean", func(*testing.T, string, *gitRunner) {}},
		{"modified", func(t *testing.T, ws string, _ *gitRunner) { write(t, ws, "a.txt", "one more\n") }},
		{"modified, same size", func(t *testing.T, ws string, _ *gitRunner) { write(t, ws, "a.txt", "two\n") }},
		{"staged", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "a.txt", "staged\n")
			g.run("add", "a.txt")
		}},
		{"staged new file", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "new.txt", "n\n")
			g.run("add", "new.txt")
		}},
		{"deleted", func(t *testing.T, ws string, _ *gitRunner) { rm(t, ws, "dir/b.txt") }},
		{"untracked", func(t *testing.T, ws string, _ *gitRunner) { write(t, ws, "u.txt", "u\n") }},
		{"untracked in a new folder", func(t *testing.T, ws string, _ *gitRunner) {
			write(t, ws, "new/deep/u.txt", "u\n")
		}},
		{"ignored", func(t *testing.T, ws string, _ *gitRunner) {
			write(t, ws, "x.log", "l\n")
			write(t, ws, "dir/y.log", "l\n")
			write(t, ws, "build/out.bin", "b\n")
		}},
		{"excluded by info/exclude", func(t *testing.T, ws string, _ *gitRunner) {
			write(t, ws, ".git/info/exclude", "secret.txt\n")
			write(t, ws, "secret.txt", "s\n")
		}},
		{"negated in a nested .gitignore", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "dir/.gitignore", "!keep.log\n")
			g.run("add", "dir/.gitignore")
			g.run("commit", "-q", "-m", "keep")
			write(t, ws, "dir/keep.log", "k\n")
		}},
		{"ignored beside a negation", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "dir/.gitignore", "!keep.log\n")
			g.run("add", "dir/.gitignore")
			g.run("commit", "-q", "-m", "keep")
			write(t, ws, "dir/other.log", "o\n")
		}},
		{"tracked file an ignore matches, changed", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "kept.log", "k\n")
			g.run("add", "-f", "kept.log")
			g.run("commit", "-q", "-m", "kept")
			write(t, ws, "kept.log", "changed\n")
		}},
		{"empty folder", func(t *testing.T, ws string, _ *gitRunner) { mkdir(t, ws, "empty/inner") }},
		{"mode change", func(t *testing.T, ws string, _ *gitRunner) {
			if err := os.Chmod(filepath.Join(ws, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"link retargeted", func(t *testing.T, ws string, _ *gitRunner) {
			rm(t, ws, "link")
			if err := os.Symlink("dir/b.txt", filepath.Join(ws, "link")); err != nil {
				t.Fatal(err)
			}
		}},
		{"detached", func(t *testing.T, _ string, g *gitRunner) { g.run("checkout", "-q", "--detach") }},
		{"branch with a slash, packed refs", func(t *testing.T, _ string, g *gitRunner) {
			g.run("checkout", "-q", "-b", "feature/x")
			g.run("pack-refs", "--all")
		}},
		{"loose and packed objects after gc", func(t *testing.T, ws string, g *gitRunner) {
			g.run("gc", "-q")
			write(t, ws, "later.txt", "l\n")
			g.run("add", "later.txt")
			g.run("commit", "-q", "-m", "later")
			write(t, ws, "dir/b.txt", "changed\n")
		}},
		{"merge conflict", func(t *testing.T, ws string, g *gitRunner) {
			g.run("checkout", "-q", "-b", "other")
			write(t, ws, "a.txt", "theirs\n")
			g.run("commit", "-q", "-am", "theirs")
			g.run("checkout", "-q", "main")
			write(t, ws, "a.txt", "ours\n")
			g.run("commit", "-q", "-am", "ours")
			g.try("merge", "-q", "other")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, g := committed(t)
			c.setup(t, ws, g)
			compare(t, ws, g)
		})
	}
}

func TestReadAgreesWithGitBeforeTheFirstCommit(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, ws string, g *gitRunner)
	}{
		{"empty", func(*testing.T, string, *gitRunner) {}},
		{"untracked", func(t *testing.T, ws string, _ *gitRunner) { write(t, ws, "u.txt", "u\n") }},
		{"staged", func(t *testing.T, ws string, g *gitRunner) {
			write(t, ws, "s.txt", "s\n")
			g.run("add", "s.txt")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			g := newGit(t, ws)
			g.run("init", "-q", "-b", "main")
			c.setup(t, ws, g)
			compare(t, ws, g)
		})
	}
}

func compare(t *testing.T, ws string, g *gitRunner) {
	t.Helper()
	got, err := Read(context.Background(), ws)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := g.says()
	if got.Commit != want.Commit || got.Branch != want.Branch || got.Dirty != want.Dirty ||
		!slices.Equal(got.Tracked, want.Tracked) {
		t.Errorf("Read = %+v\n git says %+v\nstatus:\n%s", got, want, g.run("status", "--porcelain"))
	}
}

func rm(t *testing.T, ws, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(ws, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, ws, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, filepath.FromSlash(name)), 0o755); err != nil {
		t.Fatal(err)
	}
}
