//go:build !unix

package sshexec

import (
	"errors"
	"net"
	"os"
)

// OpenSSH on Windows has no ControlMaster: Windows targets connect themselves.
var errNoFilePassing = errors.New("no OpenSSH masters on this platform")

func ownSocket(string) error { return errNoFilePassing }

func sendFiles(net.Conn, [3]*os.File) error { return errNoFilePassing }
