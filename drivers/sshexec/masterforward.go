package sshexec

import (
	"bytes"
	"context"
	"fmt"
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
	if err := f.request(ctx, muxOpenFwd); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("forwarding %s through the OpenSSH master at %s: %w", path, controlPath, err)
	}
	return f, nil
}

// cancel asks the master to close the forward (bounded by
// muxHandshakeBound) and removes the folder of its socket.
func (f *masterForward) cancel() {
	f.request(context.Background(), muxCloseFwd)
	os.RemoveAll(filepath.Dir(f.local))
}

// request sends the forward's spec with typ (open or close) on a control
// connection of its own and reads the master's answer.
func (f *masterForward) request(ctx context.Context, typ uint32) error {
	ctl, err := dialMaster(ctx, f.controlPath)
	if err != nil {
		return err
	}
	defer ctl.Close()
	stop := context.AfterFunc(ctx, func() { ctl.SetDeadline(time.Unix(1, 0)) })
	defer stop()
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
