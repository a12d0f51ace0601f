package gitstate

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Bounds on what one read inflates. A guest can write a loose object of a
// megabyte that inflates to a gigabyte, or a pack entry saying it holds
// one; go-git would hold all of it. The objects a read needs (HEAD's
// commit, its trees) are kilobytes, a tree of a large folder megabytes.
const (
	maxObjectBytes   = 16 << 20  // one object, or one entry of a delta chain
	maxInflatedBytes = 256 << 20 // everything one read inflates
	maxDeltaChain    = 1000      // entries from an object to its base (git packs 50 deep)
)

// LimitError is a read stopped at one of its bounds: git cannot say then,
// and the caller reports why.
type LimitError struct {
	Object string // the object's hash
	Bytes  int64  // what it (or the read with it) would inflate to
	Limit  int64
	What   string // "object", "read", "delta chain"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("git object %s: %s of %d, more than sbf reads (%d)", e.Object, e.What, e.Bytes, e.Limit)
}

// Coded is the error's GIT_LIMIT_EXCEEDED form.
func (e *LimitError) Coded() *coded.Error {
	return coded.New(coded.GitLimit, map[string]any{"object": e.Object, "bytes": e.Bytes, "limit": e.Limit,
		"what": e.What}, "the git state was not read: %s", e.Error())
}

// boundedObjects reads objects for go-git within the bounds: loose ones
// itself, inflating no more than their header says and the bounds allow;
// packed ones through go-git once their delta chain, entry by entry, is
// within them. Objects of alternates are not read.
type boundedObjects struct {
	*filesystem.Storage
	dir      *dotgit.DotGit
	cache    cache.Object
	packs    map[plumbing.Hash]*idxfile.MemoryIndex
	inflated int64
}

func newBoundedObjects(fs billy.Filesystem, objects cache.Object) *boundedObjects {
	return &boundedObjects{
		Storage: filesystem.NewStorageWithOptions(fs, objects, filesystem.Options{AlternatesFS: fs}),
		dir:     dotgit.NewWithOptions(fs, dotgit.Options{AlternatesFS: fs}),
		cache:   objects,
	}
}

// EncodedObject is the object h, refused past the bounds (a *LimitError).
func (b *boundedObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := b.cache.Get(h); ok {
		return obj, nil
	}
	f, err := b.dir.Object(h)
	switch {
	case err == nil:
		defer f.Close()
		return b.loose(f, t, h)
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if err := b.checkPacked(h); err != nil {
		return nil, err
	}
	return b.Storage.EncodedObject(t, h)
}

// charge counts size against the read's bound.
func (b *boundedObjects) charge(h plumbing.Hash, size int64) error {
	if b.inflated+size > maxInflatedBytes {
		return &LimitError{Object: h.String(), Bytes: b.inflated + size, Limit: maxInflatedBytes,
			What: "read inflating"}
	}
	b.inflated += size
	return nil
}

func (b *boundedObjects) loose(f io.Reader, t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	r, err := objfile.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	typ, size, err := r.Header()
	if err != nil {
		return nil, err
	}
	if size > maxObjectBytes {
		return nil, &LimitError{Object: h.String(), Bytes: size, Limit: maxObjectBytes, What: "object of"}
	}
	if t != plumbing.AnyObject && typ != t {
		return nil, plumbing.ErrObjectNotFound
	}
	if err := b.charge(h, size); err != nil {
		return nil, err
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(typ)
	if n, err := io.Copy(obj, io.LimitReader(r, size+1)); err != nil {
		return nil, err
	} else if n != size {
		return nil, &LimitError{Object: h.String(), Bytes: n, Limit: size,
			What: "object inflating past its size, at least"}
	}
	b.cache.Put(obj)
	return obj, nil
}

// checkPacked walks h's delta chain in the packs: every entry within
// maxObjectBytes, at most maxDeltaChain of them, and the whole chain and
// the object it makes charged to the read.
func (b *boundedObjects) checkPacked(h plumbing.Hash) error {
	target, err := b.Storage.EncodedObjectSize(h)
	if err != nil {
		return err
	}
	if target > maxObjectBytes {
		return &LimitError{Object: h.String(), Bytes: target, Limit: maxObjectBytes, What: "object of"}
	}
	pack, offset, err := b.find(h)
	if err != nil {
		return err
	}
	chain := target
	for depth := 0; ; depth++ {
		if depth > maxDeltaChain {
			return &LimitError{Object: h.String(), Bytes: int64(depth), Limit: maxDeltaChain, What: "delta chain of"}
		}
		head, err := b.header(pack, offset)
		if err != nil {
			return err
		}
		if head.Length > maxObjectBytes {
			return &LimitError{Object: h.String(), Bytes: head.Length, Limit: maxObjectBytes, What: "delta entry of"}
		}
		chain += head.Length
		switch head.Type {
		case plumbing.OFSDeltaObject:
			offset = head.OffsetReference
		case plumbing.REFDeltaObject:
			if pack, offset, err = b.find(head.Reference); err != nil {
				return err
			}
		default:
			return b.charge(h, chain)
		}
	}
}

// header reads the entry header at offset in pack.
func (b *boundedObjects) header(pack plumbing.Hash, offset int64) (*packfile.ObjectHeader, error) {
	f, err := b.dir.ObjectPack(pack)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return packfile.NewScanner(f).SeekObjectHeader(offset)
}

// find is the pack holding h and its offset there.
func (b *boundedObjects) find(h plumbing.Hash) (plumbing.Hash, int64, error) {
	if b.packs == nil {
		if err := b.readIndexes(); err != nil {
			return plumbing.ZeroHash, 0, err
		}
	}
	for pack, idx := range b.packs {
		if offset, err := idx.FindOffset(h); err == nil {
			return pack, offset, nil
		}
	}
	return plumbing.ZeroHash, 0, plumbing.ErrObjectNotFound
}

func (b *boundedObjects) readIndexes() error {
	hashes, err := b.dir.ObjectPacks()
	if err != nil {
		return err
	}
	b.packs = map[plumbing.Hash]*idxfile.MemoryIndex{}
	for _, pack := range hashes {
		f, err := b.dir.ObjectPackIdx(pack)
		if err != nil {
			return err
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(idx)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading the index of pack %s: %w", pack, err)
		}
		b.packs[pack] = idx
	}
	return nil
}
