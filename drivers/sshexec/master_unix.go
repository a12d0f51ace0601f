//go:build unix

package sshexec

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// ownSocket accepts a socket (not a link to one) this user owns.
func ownSocket(path string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case info.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is not a socket", path)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s is not this user's", path)
	}
	return nil
}

// sendFiles passes files to the master one at a time, each with a byte
// of data, as OpenSSH's own client does (the master reads them that way).
func sendFiles(ctl net.Conn, files [3]*os.File) error {
	uc, ok := ctl.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("the control connection is a %T, not a unix socket", ctl)
	}
	for _, f := range files {
		raw, err := f.SyscallConn()
		if err != nil {
			return err
		}
		var sendErr error
		if err := raw.Control(func(fd uintptr) {
			_, _, sendErr = uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(fd)), nil)
		}); err != nil {
			return err
		}
		if sendErr != nil {
			return fmt.Errorf("passing the session's stdio to the master: %w", sendErr)
		}
	}
	return nil
}
