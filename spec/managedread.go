package spec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// managedRead is the managed overrides file as one read found it: its
// bytes' layer, the document they parse to, and the file's identity, so
// later steps of the request reuse it unless the file changed since.
type managedRead struct {
	data []byte
	err  error       // reading it (fs.ErrNotExist: there is none)
	info fs.FileInfo // nil when there is none
}

// readManagedFile reads the workspace's overrides as sbf's own file
// (never through a link), bounded as every layer is.
func readManagedFile(root string) managedRead {
	readcount.Add(readcount.Overrides)
	data, info, err := managedFolder(root).ReadFile(OverridesFile, int64(DefaultLimits.MaxBytes+len(bom)))
	return managedRead{data: data, err: err, info: info}
}

// layer is the read as a layer of the desired state.
func (m managedRead) layer(root string, b Backends) (*layer, Errors) {
	return layerOf(filepath.Join(root, Dir, OverridesFile), m.data, m.err, true, b)
}

// document is the read as an editable document (empty when absent).
func (m managedRead) document(root string) (*Managed, error) {
	path := filepath.Join(root, Dir, OverridesFile)
	if errors.Is(m.err, fs.ErrNotExist) {
		return &Managed{tree: map[string]any{}}, nil
	}
	if m.err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, m.err)
	}
	tree, err := decodeTOML(bytes.TrimPrefix(m.data, bom))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &Managed{tree: tree}, nil
}

// current says whether the file is still what m read: absent then and now,
// or the same file, size and modification time (sbf replaces it whole, so
// each write is a new file; a hand edit changes its time).
func (m managedRead) current(root string) bool {
	info, err := managedFolder(root).Stat(OverridesFile)
	if m.info == nil {
		return errors.Is(m.err, fs.ErrNotExist) && errors.Is(err, fs.ErrNotExist)
	}
	return err == nil && os.SameFile(m.info, info) && m.info.Size() == info.Size() &&
		m.info.ModTime().Equal(info.ModTime())
}

// ReadManaged loads the document of a workspace (empty when absent).
func ReadManaged(root string) (*Managed, error) { return readManagedFile(root).document(root) }

// Fresh is r, or r resolved again with its overrides file read anew when
// the file changed since r read it (another run edited it meanwhile).
func (r *Resolved) Fresh() (*Resolved, error) {
	if r.src == nil || r.src.read == nil || !r.src.read.current(r.Root) {
		return r.WithManaged(nil)
	}
	return r, nil
}

// Managed is the overrides document r was resolved from, to edit: r's own
// read when the file is unchanged since, else read anew.
func (r *Resolved) Managed() (*Managed, error) {
	if r.src == nil || r.src.read == nil || !r.src.read.current(r.Root) {
		return ReadManaged(r.Root)
	}
	return r.src.read.document(r.Root)
}

// EditManaged applies edit to the workspace's document under a lock and
// writes it atomically. The edit sees the current document (r's read when
// the file has not changed since), so concurrent editors (CLI and MCP
// server) never lose each other's changes.
func EditManaged(ctx context.Context, r *Resolved, who flock.Holder, edit func(*Managed) error) error {
	dir := managedFolder(r.Root)
	if err := dir.Make(); err != nil {
		return fmt.Errorf("creating %s: %w", dir.Path(), err)
	}
	lock, err := flock.Acquire(ctx, dir.File("overrides.lock"), who, time.Minute)
	if err != nil {
		return err
	}
	defer lock.Release()
	m, err := r.Managed()
	if err != nil {
		return err
	}
	before := m.Clone()
	if err := edit(m); err != nil {
		return err
	}
	if m.Equal(before) {
		return nil
	}
	data, err := m.Encode()
	if err != nil {
		return err
	}
	return dir.WriteFile(OverridesFile, data, 0o644)
}
