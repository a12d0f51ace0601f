package sshexec

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"golang.org/x/crypto/ssh"
)

// CopyIn copies a local file or folder to remotePath in the guest as one
// tar stream over SSH: one session, however many files.
func (p *Pool) CopyIn(ctx context.Context, instance, localPath, remotePath string) error {
	s, stderr, err := p.copySession(ctx, instance)
	if err != nil {
		if fb := p.opts.Fallbacks.CopyIn; fb != nil {
			return fb(ctx, instance, localPath, remotePath, err)
		}
		return err
	}
	defer s.Close()
	stdin, err := s.StdinPipe()
	if err != nil {
		return err
	}
	dir, base := splitRemote(remotePath)
	if err := s.Start("mkdir -p " + shellQuote(dir) + " && tar -xf - -C " + shellQuote(dir)); err != nil {
		return fmt.Errorf("starting tar in %s: %w", instance, err)
	}
	werr := WriteTar(stdin, localPath, base)
	stdin.Close()
	if err := s.Wait(); err != nil {
		return fmt.Errorf("extracting into %s:%s: %v: %s", instance, remotePath, err, strings.TrimSpace(stderr.String()))
	}
	return werr
}

// CopyOut copies a guest file or folder to localPath the same way.
func (p *Pool) CopyOut(ctx context.Context, instance, remotePath, localPath string) error {
	s, stderr, err := p.copySession(ctx, instance)
	if err != nil {
		if fb := p.opts.Fallbacks.CopyOut; fb != nil {
			return fb(ctx, instance, remotePath, localPath, err)
		}
		return err
	}
	defer s.Close()
	stdout, err := s.StdoutPipe()
	if err != nil {
		return err
	}
	dir, base := splitRemote(remotePath)
	if err := s.Start("tar -cf - -C " + shellQuote(dir) + " " + shellQuote(base)); err != nil {
		return fmt.Errorf("starting tar in %s: %w", instance, err)
	}
	rerr := ReadTar(stdout, base, localPath)
	io.Copy(io.Discard, stdout)
	if err := s.Wait(); err != nil {
		return fmt.Errorf("archiving %s:%s: %v: %s", instance, remotePath, err, strings.TrimSpace(stderr.String()))
	}
	return rerr
}

// copySession opens a session whose stderr is kept for error messages.
func (p *Pool) copySession(ctx context.Context, instance string) (*ssh.Session, *strings.Builder, error) {
	s, err := p.session(ctx, instance)
	if err != nil {
		return nil, nil, err
	}
	stderr := &strings.Builder{}
	s.Stderr = stderr
	return s, stderr, nil
}

// splitRemote splits a guest path into its folder and last element.
func splitRemote(p string) (dir, base string) {
	dir, base = path.Split(path.Clean(p))
	if dir == "" {
		dir = "."
	}
	return dir, base
}
