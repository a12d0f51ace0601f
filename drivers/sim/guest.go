package sim

import (
	"context"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// A running sim instance's "guest" is a folder of the world: commands run
// there for real (sh -c, with the folder as working directory and HOME),
// and a guest path /a/b is the folder's a/b. Commands are not confined:
// the sim is a test and demo driver, never a default, and RunsOnHost says
// so, so sbf never runs its own guest scripts (Docker installs) with it.

// guestDir is the instance's guest folder.
func (d *Driver) guestDir(name string) string { return filepath.Join(d.dir, "guests", name) }

// RunsOnHost reports that commands run on this host, not in a VM.
func (d *Driver) RunsOnHost() bool { return true }

// GuestPath maps a guest path into the instance's folder; no path leads
// out of it.
func (d *Driver) GuestPath(instance, p string) string {
	return filepath.Join(d.guestDir(instance), filepath.FromSlash(path.Clean("/"+p)))
}

// running checks the instance exists and runs, as a VM must to take
// commands.
func (d *Driver) running(instance string) error {
	r, err := d.read(instance)
	if err != nil {
		return err
	}
	switch r.Status {
	case drivers.Running:
	case drivers.Booting:
		return fmt.Errorf("sim instance %s: %w", instance, drivers.ErrBooting)
	default:
		return fmt.Errorf("sim instance %s is %s, not running", instance, r.Status)
	}
	return os.MkdirAll(d.guestDir(instance), 0o755)
}

// Exec runs the command with sh in the instance's folder.
func (d *Driver) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	if err := d.begin(ctx, "exec", instance); err != nil {
		return drivers.ExecResult{}, err
	}
	if err := d.running(instance); err != nil {
		return drivers.ExecResult{}, d.end("exec", instance, err)
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	dir := d.guestDir(instance)
	cmd := exec.CommandContext(ctx, "sh", "-c", sshexec.StatusPassing(req.Command)) // as a VM's guest runs it
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "SBF_SIM_INSTANCE=" + instance}
	stdout, stderr, toStdout, toStderr := req.Outputs()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, toStdout, toStderr
	proc.Group(cmd) // a timeout ends the whole command, children too
	cmd.Cancel = func() error { return proc.KillGroup(cmd) }
	cmd.WaitDelay = time.Second
	start := d.clock.Now()
	err := cmd.Start()
	if err == nil {
		stop := forward(req.Signals, cmd)
		err = cmd.Wait()
		stop()
	}
	res := sshexec.Result(stdout, stderr, "sim")
	res.Duration = d.clock.Now().Sub(start)
	res.DurationMS = res.Duration.Milliseconds()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil && req.Timeout > 0:
		sshexec.MarkTimedOut(&res, req.Timeout)
		err = nil
	case errors.As(err, &exit):
		res.ExitCode, err = proc.ExitStatus(exit), nil
	}
	return res, d.end("exec", instance, err)
}

// forward passes signals on to the command's group until stop is called.
func forward(signals <-chan drivers.Signal, cmd *exec.Cmd) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-signals:
				proc.SignalGroup(cmd, string(sig))
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// CopyIn copies a local file or folder to a path in the instance's folder.
func (d *Driver) CopyIn(ctx context.Context, instance, localPath, remotePath string) error {
	if err := d.begin(ctx, "copy-in", instance); err != nil {
		return err
	}
	if err := d.running(instance); err != nil {
		return d.end("copy-in", instance, err)
	}
	return d.end("copy-in", instance, copyTree(localPath, d.GuestPath(instance, remotePath)))
}

// copyTree streams src into the simulated guest through the same tar code
// a VM copy uses, so the same confinement applies at dst.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := sshexec.WriteTar(pw, src, "top")
		pw.CloseWithError(err)
		written <- err
	}()
	rerr := intoGuest(pr, "top", dst)
	pr.Close() // a reader that gave up must not leave the writer blocked
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return werr
	}
	if rerr != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, rerr)
	}
	return nil
}

// intoGuest unpacks into the simulated guest's folder as a VM's tar
// would: everything the archive holds, confined to dst's folder.
func intoGuest(r io.Reader, top, dst string) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = hostpath.Unpack(r, root, top, filepath.Base(dst), hostpath.UnpackOptions{})
	return err
}

func unpackIn(r io.Reader, root *os.Root, rel string) error {
	_, err := hostpath.Unpack(r, root, "", rel, hostpath.UnpackOptions{})
	return err
}

// PutArchive unpacks a tar stream into a folder of the instance's.
func (d *Driver) PutArchive(ctx context.Context, instance, dir string, archive io.Reader) error {
	root, rel, err := d.guestRoot(ctx, "put-archive", instance, dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return d.end("put-archive", instance, err)
	}
	return d.end("put-archive", instance, unpackIn(archive, root, rel))
}

// GetArchive streams a path of the instance's folder as a tar archive.
func (d *Driver) GetArchive(ctx context.Context, instance, p string, archive io.Writer) error {
	root, rel, err := d.guestRoot(ctx, "get-archive", instance, p)
	if err != nil {
		return err
	}
	defer root.Close()
	return d.end("get-archive", instance, sshexec.WriteTarRoot(archive, root, filepath.ToSlash(rel), path.Base("/"+p)))
}

// guestRoot opens the instance's folder as an os.Root, with p below it.
func (d *Driver) guestRoot(ctx context.Context, op, instance, p string) (*os.Root, string, error) {
	if err := d.begin(ctx, op, instance); err != nil {
		return nil, "", err
	}
	if err := d.running(instance); err != nil {
		return nil, "", d.end(op, instance, err)
	}
	root, err := os.OpenRoot(d.guestDir(instance))
	if err != nil {
		return nil, "", d.end(op, instance, err)
	}
	rel := path.Clean("/" + p)[1:]
	if rel == "" {
		rel = "."
	}
	return root, filepath.FromSlash(rel), nil
}

// Remove deletes paths of the instance's folder.
func (d *Driver) Remove(ctx context.Context, instance string, paths []string) error {
	root, _, err := d.guestRoot(ctx, "remove", instance, "/")
	if err != nil {
		return err
	}
	defer root.Close()
	for _, p := range paths {
		rel := filepath.FromSlash(path.Clean("/" + p)[1:])
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return d.end("remove", instance, err)
		}
	}
	return d.end("remove", instance, nil)
}
