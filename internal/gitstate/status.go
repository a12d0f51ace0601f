package gitstate

import (
	"bytes"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	fsnoder "github.com/go-git/go-git/v5/utils/merkletrie/filesystem"
	idxnoder "github.com/go-git/go-git/v5/utils/merkletrie/index"
	"github.com/go-git/go-git/v5/utils/merkletrie/noder"
)

// dirty says whether `git status --porcelain` would list anything: a
// change staged against HEAD, a change in the files against the index,
// or a file the index does not know that no .gitignore or
// .git/info/exclude ignores. It compares as go-git's Worktree.Status does,
// without its submodule handling, which would open or create a
// submodule's repository: a submodule counts as at the commit the index
// records.
func (r *repo) dirty(commit string, idx *index.Index) (bool, error) {
	tree, err := r.commitTree(commit)
	if err != nil {
		return false, err
	}
	var from noder.Noder
	if tree != nil {
		from = object.NewTreeRootNode(tree)
	}
	staged, err := merkletrie.DiffTree(from, idxnoder.NewRootNode(idx), sameHash)
	if err != nil || len(staged) > 0 {
		return len(staged) > 0, err
	}
	files := fsnoder.NewRootNodeWithOptions(r.worktree, submodules(idx), fsnoder.Options{Index: idx})
	changed, err := merkletrie.DiffTree(idxnoder.NewRootNode(idx), files, sameHash)
	if err != nil {
		return false, err
	}
	return len(r.notIgnored(changed)) > 0, nil
}

// notIgnored drops the files the index does not track that an ignore
// pattern matches, as Worktree.Status does.
func (r *repo) notIgnored(changes merkletrie.Changes) merkletrie.Changes {
	patterns, err := gitignore.ReadPatterns(r.worktree, nil)
	if err != nil || len(patterns) == 0 {
		return changes
	}
	m := gitignore.NewMatcher(patterns)
	var out merkletrie.Changes
	for _, ch := range changes {
		if len(ch.From) == 0 && len(ch.To) > 0 && m.Match(names(ch.To), ch.To.IsDir()) {
			continue
		}
		out = append(out, ch)
	}
	return out
}

func names(p noder.Path) []string {
	out := make([]string, len(p))
	for i, n := range p {
		out[i] = n.Name()
	}
	return out
}

// submodules maps each submodule's path to the commit the index records.
func submodules(idx *index.Index) map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	for _, e := range idx.Entries {
		if e.Mode == filemode.Submodule {
			out[e.Name] = e.Hash
		}
	}
	return out
}

var folderHash = make([]byte, 24)

// sameHash is go-git's comparison of two nodes: a folder's all-zero hash
// never equals anything, so folders are always descended.
func sameHash(a, b noder.Hasher) bool {
	ha, hb := a.Hash(), b.Hash()
	if bytes.Equal(ha, folderHash) || bytes.Equal(hb, folderHash) {
		return false
	}
	return bytes.Equal(ha, hb)
}
