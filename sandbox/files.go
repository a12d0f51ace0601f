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
