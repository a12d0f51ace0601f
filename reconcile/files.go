package reconcile

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// archiver is the target's backend as a mover of tar archives.
func (t *Target) archiver() (drivers.ArchiveCopier, error) {
	drv, err := t.Driver()
	if err != nil {
		return nil, err
	}
	a, ok := drv.(drivers.ArchiveCopier)
	if !ok {
		return nil, fmt.Errorf("the %s driver cannot copy files", t.DriverName)
	}
	return a, nil
}

// CopyIn copies a host file or folder to a guest path. The host side is
// read through the policy's root, so nothing outside it is read.
func (t *Target) CopyIn(ctx context.Context, policy hostpath.Policy, base, localPath, remotePath string) error {
	a, err := t.archiver()
	if err != nil {
		return err
	}
	place, err := policy.Confine(base, localPath)
	if err != nil {
		return err
	}
	defer place.Close()
	if _, err := place.Root.Lstat(place.Rel); err != nil {
		return coded.New(coded.BackendCommand, map[string]any{"local_path": localPath}, "local path does not exist: %s", localPath)
	}
	dir, top := path.Split(path.Clean(remotePath))
	return t.put(ctx, a, dir, func(w io.Writer) error {
		return sshexec.WriteTarFS(w, place.Root.FS(), filepath.ToSlash(place.Rel), top)
	})
}

// put streams an archive written by write into dir in the guest.
func (t *Target) put(ctx context.Context, a drivers.ArchiveCopier, dir string, write func(io.Writer) error) error {
	if dir == "" {
		dir = "."
	}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err)
		written <- err
	}()
	err := a.PutArchive(ctx, t.Instance, dir, pr)
	pr.Close()
	if werr := <-written; werr != nil && err == nil {
		return werr
	}
	return err
}

// CopyOut copies a guest path to the host. Everything is written through
// the policy's root: no archive entry and no symlink leads outside it.
func (t *Target) CopyOut(ctx context.Context, policy hostpath.Policy, base, remotePath, localPath string) error {
	a, err := t.archiver()
	if err != nil {
		return err
	}
	place, err := policy.Confine(base, localPath)
	if err != nil {
		return err
	}
	defer place.Close()
	if dir := filepath.Dir(place.Rel); dir != "." {
		if err := place.Root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	pr, pw := io.Pipe()
	extracted := make(chan error, 1)
	go func() {
		err := sshexec.ReadTarIn(pr, place.Root, path.Base(path.Clean(remotePath)), place.Rel)
		io.Copy(io.Discard, pr)
		extracted <- err
	}()
	err = a.GetArchive(ctx, t.Instance, remotePath, pw)
	pw.CloseWithError(err)
	if xerr := <-extracted; err == nil {
		err = xerr
	}
	return err
}

// Artifact is one collected guest path.
type Artifact struct {
	RemotePath string `json:"remote_path"`
	LocalPath  string `json:"local_path"`
}

// Collect copies guest paths into a host folder (created when missing),
// named as SandboxForge v1 named them: the remote path's last element (or
// artifact-N), prefixed "N-" when that name is taken.
func (t *Target) Collect(ctx context.Context, policy hostpath.Policy, base string, remotePaths []string, localDest string) (string, []Artifact, error) {
	if len(remotePaths) == 0 {
		return "", nil, coded.New(coded.InvalidArguments, map[string]any{"field": "remote_paths"}, "remote_paths cannot be empty")
	}
	dest, err := policy.Confine(base, localDest)
	if err != nil {
		return "", nil, err
	}
	defer dest.Close()
	if err := dest.Root.MkdirAll(dest.Rel, 0o755); err != nil {
		return "", nil, fmt.Errorf("creating %s: %w", localDest, err)
	}
	var out []Artifact
	for i, remote := range remotePaths {
		name := path.Base(path.Clean(remote))
		if name == "/" || name == "." || name == "" {
			name = "artifact-" + strconv.Itoa(i)
		}
		if _, err := dest.Root.Lstat(filepath.Join(dest.Rel, name)); err == nil {
			name = strconv.Itoa(i) + "-" + name
		}
		local := filepath.Join(dest.Abs, name)
		if err := t.CopyOut(ctx, policy, base, remote, local); err != nil {
			return dest.Abs, out, fmt.Errorf("collecting %s: %w", remote, err)
		}
		out = append(out, Artifact{RemotePath: remote, LocalPath: local})
	}
	return dest.Abs, out, nil
}
