// Package gitstate reads what git would say of a workspace's repository
// (HEAD's commit and branch, whether the tree is dirty, the paths the
// index tracks) without running git: go-git reads the files through
// os.Root (internal/rootfs), and nothing it reads is configuration that
// runs or redirects anything. A workspace may have been written by a
// guest; `git status` there would run the repository's core.fsmonitor,
// follow core.worktree, and open a repository planted under any name.
//
// Only the workspace's own .git folder is a repository: a .git file
// (gitdir: …), a .git link, bare-repository files at the root or under
// another name read as no repository. No global or system config and no
// global excludes are read; object alternates are not read. What objects
// inflate to is bounded (bounded.go): past the bounds the read fails with
// a *LimitError.
package gitstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/sandboxforge/sbf/internal/rootfs"
)

// State is what git would say of a workspace.
type State struct {
	Commit  string   // HEAD's commit; "" when HEAD names none yet
	Branch  string   // the branch HEAD is on; "" when detached or before the first commit
	Dirty   bool     // `git status --porcelain` would list something
	Tracked []string // the paths `git ls-files` lists, sorted; nil when the index is unreadable
}

// ErrNoRepository is a workspace without a .git folder of its own.
var ErrNoRepository = errors.New("not a git repository (no .git folder of its own)")

// objectCacheSize bounds the objects kept in memory during one read.
const objectCacheSize = 8 * cache.MiByte

// Read reads the state of the repository at workspace/.git. It returns
// when ctx ends even if the read has not (go-git takes no context): the
// read then fails at its next file access and ends by itself. Fields read
// before a failure are kept in the returned State, beside the error.
func Read(ctx context.Context, workspace string) (State, error) {
	type result struct {
		st  State
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := read(ctx, workspace)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-ctx.Done():
		return State{}, fmt.Errorf("reading the git state of %s: %w", workspace, ctx.Err())
	}
}

func read(ctx context.Context, workspace string) (State, error) {
	repo, err := open(ctx, workspace)
	if err != nil {
		return State{}, err
	}
	defer repo.close()
	var st State
	head, err := repo.head()
	if err != nil {
		return st, fmt.Errorf("reading HEAD in %s: %w", workspace, err)
	}
	st.Commit, st.Branch = head.commit, head.branch
	idx, err := repo.store.Index()
	if err != nil {
		return st, fmt.Errorf("reading the index in %s: %w", workspace, err)
	}
	st.Tracked = tracked(idx)
	if st.Dirty, err = repo.dirty(head.commit, idx); err != nil {
		return st, fmt.Errorf("comparing HEAD, the index and the files in %s: %w", workspace, err)
	}
	return st, nil
}

// repo is an open workspace repository; every file is read through a
// root: the worktree's at the workspace, the repository's at its .git.
type repo struct {
	wsRoot, gitRoot  *os.Root
	worktree, dotGit *rootfs.FS
	store            *boundedObjects
}

// open opens workspace/.git only when it is a folder, not a link or a
// file, and keeps the folder it checked (a link swapped in meanwhile is
// refused).
func open(ctx context.Context, workspace string) (*repo, error) {
	wsRoot, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", workspace, err)
	}
	r := &repo{wsRoot: wsRoot}
	if err := r.openGit(ctx); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *repo) openGit(ctx context.Context) error {
	seen, err := r.wsRoot.Lstat(".git")
	if errors.Is(err, os.ErrNotExist) || err == nil && !seen.IsDir() {
		return ErrNoRepository
	}
	if err != nil {
		return err
	}
	if r.gitRoot, err = r.wsRoot.OpenRoot(".git"); err != nil {
		return err
	}
	opened, err := r.gitRoot.Stat(".")
	if err != nil {
		return err
	}
	if !os.SameFile(seen, opened) {
		return ErrNoRepository
	}
	r.worktree, r.dotGit = rootfs.New(ctx, r.wsRoot), rootfs.New(ctx, r.gitRoot)
	// Alternates are looked up in .git's own root, where an absolute or
	// parent path is refused: an object lent by another repository is
	// not found.
	// Objects are read within bounds on what they inflate (bounded.go).
	r.store = newBoundedObjects(r.dotGit, cache.NewObjectLRU(objectCacheSize))
	return r.checkFormat()
}

// checkFormat refuses a repository whose objects or refs go-git would
// misread (SHA-256 objects, reftable refs): git cannot say then.
func (r *repo) checkFormat() error {
	cfg, err := r.store.Config()
	if err != nil {
		return fmt.Errorf("reading .git/config: %w", err)
	}
	ext := cfg.Raw.Section("extensions").Options
	if f := ext.Get("objectformat"); f != "" && f != "sha1" {
		return fmt.Errorf("objects in %q format are not read", f)
	}
	if f := ext.Get("refstorage"); f != "" && f != "files" {
		return fmt.Errorf("refs in %q storage are not read", f)
	}
	return nil
}

func (r *repo) close() {
	for _, fs := range []*rootfs.FS{r.worktree, r.dotGit} {
		if fs != nil {
			fs.Close()
		}
	}
	for _, root := range []*os.Root{r.gitRoot, r.wsRoot} {
		if root != nil {
			root.Close()
		}
	}
}

type head struct{ commit, branch string }

// head resolves HEAD as `git rev-parse HEAD` and `--abbrev-ref HEAD` do:
// no commit and no branch before the first commit, no branch when
// detached.
func (r *repo) head() (head, error) {
	ref, err := storer.ResolveReference(r.store, plumbing.HEAD)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return head{}, nil
	}
	if err != nil {
		return head{}, err
	}
	h := head{commit: ref.Hash().String()}
	sym, err := r.store.Reference(plumbing.HEAD)
	if err != nil {
		return head{}, err
	}
	if sym.Type() == plumbing.SymbolicReference {
		h.branch = sym.Target().Short()
	}
	return h, nil
}

// tracked lists the index's paths as `git ls-files` does: a path in
// conflict once per stage.
func tracked(idx *index.Index) []string {
	out := make([]string, 0, len(idx.Entries))
	for _, e := range idx.Entries {
		out = append(out, e.Name)
	}
	slices.Sort(out)
	return out
}

// commitTree is HEAD's tree, nil before the first commit.
func (r *repo) commitTree(commit string) (*object.Tree, error) {
	if commit == "" {
		return nil, nil
	}
	c, err := object.GetCommit(r.store, plumbing.NewHash(commit))
	if err != nil {
		return nil, err
	}
	return c.Tree()
}
