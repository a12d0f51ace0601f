//go:build !unix

package sshtest

import (
	"errors"
	"os/exec"

	"golang.org/x/crypto/ssh"
)

// terminal is unsupported without POSIX terminals: pty-req is refused.
type terminal struct{}

func parsePtyReq([]byte) *terminal                   { return nil }
func (*terminal) start(*exec.Cmd, ssh.Channel) error { return errors.New("no terminals here") }
func (*terminal) resize([]byte)                      {}
func (*terminal) drain()                             {}
