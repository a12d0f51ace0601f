package sandbox

import (
	"context"
	"errors"
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
	a := drivers.CapabilitiesOf(drv).Archive
	if a == nil {
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
		return coded.New(
			coded.BackendCommand,
			map[string]any{"local_path": localPath},
			"local path does not exist: %s",
			localPath,
		)
	}
	dir, top := path.Split(path.Clean(remotePath))
	return t.put(ctx, a, dir, func(w io.Writer) error {
		return sshexec.WriteTarRoot(w, place.Root, filepath.ToSlash(place.Rel), top)
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

// CopyOut copies a guest path to the host through the one writer guest
// data reaches the host by: confined to the policy's roots, never onto
// sbf's configuration and state, .git or the workspace's [sync] protect,
// and keeping only links that stay inside the destination. The report
// lists what was left out.
func (t *Target) CopyOut(ctx context.Context, policy hostpath.Policy, base, remotePath, localPath string) (
	hostpath.Report, error) {
	a, err := t.archiver()
	if err != nil {
		return hostpath.Report{}, err
	}
	w, err := policy.Writer(base, localPath, t.guard())
	if err != nil {
		return hostpath.Report{}, err
	}
	defer w.Close()
	pr, pw := io.Pipe()
	type extracted struct {
		rep hostpath.Report
		err error
	}
	done := make(chan extracted, 1)
	go func() {
		rep, err := w.Extract(pr, path.Base(path.Clean(remotePath)))
		if err != nil { // a refusal (the copy ceiling) ends the guest's stream too
			pr.CloseWithError(err)
		}
		io.Copy(io.Discard, pr)
		done <- extracted{rep, err}
	}()
	err = a.GetArchive(ctx, t.Instance, remotePath, pw)
	pw.CloseWithError(err)
	x := <-done
	var refused *coded.Error
	if err == nil || errors.As(x.err, &refused) { // the guest's side fails too once a refusal ends its stream
		err = x.err
	}
	return x.rep, err
}

// guard is what guest data may not overwrite in this workspace.
func (t *Target) guard() hostpath.Guard {
	return hostpath.Guard{Protect: t.Resolved.Config.Sync.Protect}
}

// Artifact is one collected guest path.
type Artifact struct {
	RemotePath string `json:"remote_path"`
	LocalPath  string `json:"local_path"`
}

// Collect copies guest paths into a host folder (created when missing),
// named as SandboxForge v1 named them: the remote path's last element (or
// artifact-N), prefixed "N-" when that name is taken.
func (t *Target) Collect(ctx context.Context, policy hostpath.Policy, base string, remotePaths []string,
	localDest string) (Collected, error) {
	if len(remotePaths) == 0 {
		return Collected{}, coded.New(coded.InvalidArguments, map[string]any{"field": "remote_paths"},
			"remote_paths cannot be empty")
	}
	dest, err := policy.Writer(base, localDest, t.guard())
	if err != nil {
		return Collected{}, err
	}
	defer dest.Close()
	out := Collected{Dest: dest.Abs()}
	if err := dest.Root().MkdirAll(dest.Rel(), 0o755); err != nil {
		return out, fmt.Errorf("creating %s: %w", localDest, err)
	}
	for i, remote := range remotePaths {
		name := path.Base(path.Clean(remote))
		if name == "/" || name == "." || name == "" {
			name = "artifact-" + strconv.Itoa(i)
		}
		if _, err := dest.Root().Lstat(filepath.Join(dest.Rel(), name)); err == nil {
			name = strconv.Itoa(i) + "-" + name
		}
		local := filepath.Join(out.Dest, name)
		rep, err := t.CopyOut(ctx, policy, base, remote, local)
		out.Report.SkippedLinks = append(out.Report.SkippedLinks, rep.SkippedLinks...)
		out.Report.SkippedPaths = append(out.Report.SkippedPaths, rep.SkippedPaths...)
		if err != nil {
			return out, fmt.Errorf("collecting %s: %w", remote, err)
		}
		out.Artifacts = append(out.Artifacts, Artifact{RemotePath: remote, LocalPath: local})
	}
	return out, nil
}

// Collected is what Collect copied, and what it left out.
type Collected struct {
	Dest      string
	Artifacts []Artifact
	Report    hostpath.Report
}

// ArchiveOut writes a tar archive of a guest path to w (`sbf cp NAME:PATH
// -`), its top entry named as the path's last element, as docker cp's is.
// Past maxBytes (≤ 0: hostpath.DefaultMaxCopyBytes) of archive it stops:
// whatever w is, a guest's folder may not write more than one copy back
// may. It returns the bytes written.
func (t *Target) ArchiveOut(ctx context.Context, remotePath string, w io.Writer, maxBytes int64) (int64, error) {
	a, err := t.archiver()
	if err != nil {
		return 0, err
	}
	if maxBytes <= 0 {
		maxBytes = hostpath.DefaultMaxCopyBytes
	}
	pr, pw := io.Pipe()
	got := make(chan error, 1)
	go func() {
		err := a.GetArchive(ctx, t.Instance, remotePath, pw)
		pw.CloseWithError(err)
		got <- err
	}()
	lr := &ceilingReader{r: pr, max: maxBytes}
	_, werr := io.Copy(w, lr)
	pr.CloseWithError(errors.Join(werr, io.ErrClosedPipe)) // a reader that gave up must not leave the guest's writer
	gerr := <-got
	switch {
	case lr.over:
		return lr.n, coded.New(hostpath.CopyLimit, map[string]any{"max_copy_bytes": maxBytes, "path": remotePath},
			"cp stopped: %s:%s is more than %d bytes of archive, the ceiling on one copy from a sandbox "+
				"([policy] max_copy_bytes); what was written is cut short. Copy a smaller folder or ask the "+
				"operator to raise the ceiling", t.Sandbox, coded.Clip(remotePath), maxBytes)
	case werr != nil:
		return lr.n, fmt.Errorf("writing the archive of %s:%s: %w", t.Sandbox, coded.Clip(remotePath), werr)
	case gerr != nil:
		return lr.n, fmt.Errorf("archiving %s:%s: %w", t.Sandbox, coded.Clip(remotePath), gerr)
	}
	return lr.n, nil
}

// ArchiveIn unpacks a tar archive read from r into a guest folder (`sbf cp
// - NAME:DIR`). The archive is the operator's (sbf's own stdin); in the
// guest it is unpacked as the guest's tar does.
func (t *Target) ArchiveIn(ctx context.Context, r io.Reader, remoteDir string) error {
	a, err := t.archiver()
	if err != nil {
		return err
	}
	if err := a.PutArchive(ctx, t.Instance, remoteDir, r); err != nil {
		return fmt.Errorf("unpacking the archive from stdin into %s:%s: %w", t.Sandbox, coded.Clip(remoteDir), err)
	}
	return nil
}
