package sshexec

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// masterForward is a forward an OpenSSH master keeps for this process, as
// `ssh -O forward -L LOCAL:PATH` asks: a connection to local, a socket in a
// folder of ours, reaches the guest's socket at path over the master's
// connection, with no handshake of ours. (The master's stdio forward, `-W`,
// would carry one connection and go with it, but OpenSSH 9.2 sends a socket
// path there as a TCP port.) It stays until cancel: conn.close.
type masterForward struct {
	controlPath, local, path string
}

func openMasterForward(ctx context.Context, controlPath, path string) (*masterForward, error) {
	dir, err := os.MkdirTemp("", "sbf-fwd-") // short: a socket path has ~100 bytes
	if err != nil {
		return nil, err
	}
	f := &masterForward{controlPath: controlPath, local: filepath.Join(dir, "s"), path: path}
	ctl, err := dialMaster(ctx, controlPath)
	if err == nil {
		stop := context.AfterFunc(ctx, func() { ctl.SetDeadline(time.Unix(1, 0)) })
		err = f.send(ctl, muxOpenFwd)
		stop()
		ctl.Close()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("forwarding %s through the OpenSSH master at %s: %w", path, controlPath, err)
	}
	return f, nil
}

// cancel asks the master to close the forward (within muxHandshakeBound:
// a connection closing has no context) and removes its socket's folder.
func (f *masterForward) cancel() error {
	dial := func(d *net.Dialer) (net.Conn, error) { return d.Dial("unix", f.controlPath) }
	ctl, err := greetMaster(f.controlPath, dial)
	if err == nil {
		err = f.send(ctl, muxCloseFwd)
		ctl.Close()
	}
	os.RemoveAll(filepath.Dir(f.local))
	return err
}

// send sends the forward's spec with typ (open or close) and reads the
// master's answer.
func (f *masterForward) send(ctl net.Conn, typ uint32) error {
	var req bytes.Buffer
	req.Write(u32(0)) // request id
	req.Write(u32(muxFwdLocal))
	req.Write(muxString(f.local))
	req.Write(u32(muxPortStreamLocal))
	req.Write(muxString(f.path))
	req.Write(u32(muxPortStreamLocal))
	if err := writeMux(ctl, typ, req.Bytes()); err != nil {
		return err
	}
	return muxAnswer(ctl, muxOK, "forward")
}
