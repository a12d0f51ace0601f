package gitstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// plantConfig makes a repository's config run a command that leaves
// marker behind on every `git status`: core.fsmonitor runs it, and
// core.worktree and core.hooksPath point where the guest chose.
func plantConfig(t *testing.T, g *gitRunner, marker, worktree string) {
	t.Helper()
	g.run("config", "core.bare", "false")
	g.run("config", "core.worktree", worktree)
	g.run("config", "core.fsmonitor", "touch '"+marker+"'; echo")
	g.run("config", "core.hooksPath", filepath.Dir(marker))
}

// gitWouldRun proves a planted repository is a live attack: the real git
// run on a copy of it creates the copy's marker.
func gitWouldRun(t *testing.T, plant func(dir, marker string)) {
	t.Helper()
	dir, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	plant(dir, marker)
	g := newGit(t, dir)
	g.try("status", "--porcelain")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the planted repository does not make git run its command (%v): the test proves nothing", err)
	}
}

func noMarker(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the planted command ran: %s exists (%v)", marker, err)
	}
}

// bareFiles writes HEAD, config, objects/ and refs/ into dir, as a guest
// syncing them back would, with a config that runs a command.
func bareFiles(t *testing.T, dir, marker string) {
	mkdir(t, dir, ".")
	g := newGit(t, dir)
	g.run("init", "-q", "--bare", "-b", "main")
	plantConfig(t, g, marker, ".")
	write(t, dir, "app.txt", "a\n")
}

func TestPlantedRepositoriesAreNeverOpened(t *testing.T) {
	gitWouldRun(t, func(dir, marker string) { bareFiles(t, dir, marker) })
	marker := filepath.Join(t.TempDir(), "ran")
	ws := t.TempDir()
	bareFiles(t, ws, marker)
	bareFiles(t, filepath.Join(ws, "planted"), marker)
	for _, dir := range []string{ws, filepath.Join(ws, "planted")} {
		if st, err := Read(context.Background(), dir); !errors.Is(err, ErrNoRepository) || st.Commit != "" {
			t.Errorf("Read(%s) = %+v, %v; want ErrNoRepository", dir, st, err)
		}
	}
	noMarker(t, marker)
}

func TestDotGitFileOrLinkIsNoRepository(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"file", "link"} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			planted := filepath.Join(ws, "planted")
			g := newGit(t, ws)
			g.run("init", "-q", "--separate-git-dir", planted, "-b", "main")
			plantConfig(t, newGit(t, planted), marker, ws)
			if name == "link" {
				rm(t, ws, ".git")
				if err := os.Symlink("planted", filepath.Join(ws, ".git")); err != nil {
					t.Fatal(err)
				}
			}
			if st, err := Read(context.Background(), ws); !errors.Is(err, ErrNoRepository) {
				t.Errorf("a .git %s: Read = %+v, %v; want ErrNoRepository", name, st, err)
			}
		})
	}
	noMarker(t, marker)
}

func TestCommandsInDotGitConfigNeverRun(t *testing.T) {
	gitWouldRun(t, func(dir, marker string) {
		committedIn(t, dir)
		plantConfig(t, newGit(t, dir), marker, dir)
	})
	marker := filepath.Join(t.TempDir(), "ran")
	ws, g := committed(t)
	plantConfig(t, g, marker, "/")
	write(t, ws, "a.txt", "changed\n")
	st, err := Read(context.Background(), ws)
	if err != nil || st.Commit == "" || !st.Dirty {
		t.Errorf("Read = %+v, %v; want the commit and dirty (core.worktree must not move the tree)", st, err)
	}
	noMarker(t, marker)
}

func committedIn(t *testing.T, dir string) {
	g := newGit(t, dir)
	g.run("init", "-q", "-b", "main")
	write(t, dir, "a.txt", "a\n")
	g.run("add", ".")
	g.run("commit", "-q", "-m", "one")
}

// outsideRepo is a repository outside the workspace; its commit's
// objects exist only there.
func outsideRepo(t *testing.T) (dir, commit string) {
	dir = t.TempDir()
	committedIn(t, dir)
	return dir, strings.TrimSpace(newGit(t, dir).run("rev-parse", "HEAD"))
}

func TestObjectsOutsideTheRepositoryAreNotFound(t *testing.T) {
	outside, commit := outsideRepo(t)
	objects := filepath.Join(outside, ".git", "objects")
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, ws string)
	}{
		{"absolute alternate", func(t *testing.T, ws string) {
			write(t, ws, ".git/objects/info/alternates", objects+"\n")
		}},
		{"relative alternate", func(t *testing.T, ws string) {
			rel, err := filepath.Rel(filepath.Join(ws, ".git", "objects"), objects)
			if err != nil {
				t.Fatal(err)
			}
			write(t, ws, ".git/objects/info/alternates", rel+"\n")
		}},
		{"objects folder is a link out", func(t *testing.T, ws string) {
			if err := os.RemoveAll(filepath.Join(ws, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(objects, filepath.Join(ws, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			g := newGit(t, ws)
			g.run("init", "-q", "-b", "main")
			write(t, ws, ".git/refs/heads/main", commit+"\n")
			c.plant(t, ws)
			if _, ok := g.try("cat-file", "-e", commit); !ok {
				t.Fatal("git does not find the outside commit: the test proves nothing")
			}
			repo, err := open(context.Background(), ws)
			if err != nil {
				t.Fatal(err)
			}
			defer repo.close()
			if c, err := object.GetCommit(repo.store, plumbing.NewHash(commit)); err == nil {
				t.Errorf("the commit outside was read: %s", c.Message)
			}
			if st, err := Read(context.Background(), ws); err == nil || st.Dirty {
				t.Errorf("Read = %+v, %v; want an error (the commit's tree is not there)", st, err)
			}
		})
	}
}

func TestReadReturnsWhenTheContextEnds(t *testing.T) {
	ws, _ := committed(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := Read(ctx, ws); !errors.Is(err, context.Canceled) || st.Commit != "" {
		t.Errorf("Read = %+v, %v; want context.Canceled and nothing", st, err)
	}
}
