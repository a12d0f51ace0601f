package sshexec

import (
	"context"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
	"io"
	"path"

	"golang.org/x/crypto/ssh"
)

// CopyIn copies a local file or folder to remotePath in the guest as one
// tar stream over SSH: one session, however many files.
func (p *Pool) CopyIn(ctx context.Context, instance, localPath, remotePath string) error {
	dir, base := splitRemote(remotePath)
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := WriteTar(pw, localPath, base)
		pw.CloseWithError(err)
		written <- err
	}()
	err := p.PutArchive(ctx, instance, dir, pr)
	pr.Close()
	werr := <-written
	var fallback *fallbackError
	if errors.As(err, &fallback) {
		if p.opts.Fallbacks.CopyIn != nil {
			return p.opts.Fallbacks.CopyIn(ctx, instance, localPath, remotePath, fallback.err)
		}
		return err
	}
	if werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return werr // what went wrong on this side says more than the guest's tar
	}
	return err
}

// fallbackError is an SSH session that could not be opened: a backend may
// still copy another way.
type fallbackError struct{ err error }

func (e *fallbackError) Error() string { return e.err.Error() }
func (e *fallbackError) Unwrap() error { return e.err }

// PutArchive unpacks a tar stream into dir in the guest over one session.
func (p *Pool) PutArchive(ctx context.Context, instance, dir string, archive io.Reader) error {
	s, stderr, err := p.copySession(ctx, instance)
	if err != nil {
		return &fallbackError{err}
	}
	defer s.Close()
	s.Stdin = archive
	if err := s.Run("mkdir -p " + shellquote.Quote(dir) + " && tar -xf - -C " + shellquote.Quote(dir)); err != nil {
		return fmt.Errorf("extracting into %s:%s: %v%s", instance, dir, err, coded.Said(stderr.String()))
	}
	return nil
}

// GetArchive writes a tar stream of path from the guest over one session.
func (p *Pool) GetArchive(ctx context.Context, instance, path string, archive io.Writer) error {
	s, stderr, err := p.copySession(ctx, instance)
	if err != nil {
		return &fallbackError{err}
	}
	defer s.Close()
	s.Stdout = archive
	dir, base := splitRemote(path)
	if err := s.Run("tar -cf - -C " + shellquote.Quote(dir) + " " + shellquote.Quote(base)); err != nil {
		return fmt.Errorf("archiving %s:%s: %v%s", instance, path, err, coded.Said(stderr.String()))
	}
	return nil
}

// copySession opens a session whose stderr is kept for error messages:
// its first copyStderr bytes, however much the guest writes there.
func (p *Pool) copySession(ctx context.Context, instance string) (*ssh.Session, *drivers.CappedBuffer, error) {
	s, err := p.session(ctx, instance)
	if err != nil {
		return nil, nil, err
	}
	stderr := drivers.NewCappedBuffer(copyStderr)
	s.Stderr = stderr
	return s, stderr, nil
}

// copyStderr is how much of a copy's stderr an error quotes.
const copyStderr = 16 << 10

// splitRemote splits a guest path into its folder and last element.
func splitRemote(p string) (dir, base string) {
	dir, base = path.Split(path.Clean(p))
	if dir == "" {
		dir = "."
	}
	return dir, base
}
