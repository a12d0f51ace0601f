package sshexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/internal/clock"
)

// A guest that refused or reset the connection before its SSH banner is
// dialled again: a VM whose sshd is (re)starting, or whose QEMU port
// forward answers before the guest does, does that for a moment (ssh's
// ConnectionAttempts exists for the same). The pauses start at
// redialFirst and double up to redialMost: soon enough to catch a guest
// as it comes up, rare enough that the attempts (an sshd fork each) do
// not slow it. A command's dial tries for redialFor; a warm-up, whose
// guest has just come up (a boot, a fork child resumed from memory), for
// warmPatience.
const redialFirst, redialMost = 250 * time.Millisecond, time.Second

var redialFor, warmPatience = 7500 * time.Millisecond, 30 * time.Second

// redialWaits are the pauses between the attempts of a dial that may try
// for patience.
func redialWaits(patience time.Duration) []time.Duration {
	var waits []time.Duration
	for wait, total := redialFirst, time.Duration(0); total+wait <= patience; wait = min(2*wait, redialMost) {
		waits = append(waits, wait)
		total += wait
	}
	return waits
}

// dial opens an SSH client to t and keeps it alive, pinging on c; a
// connection the guest drops before the handshake is tried again for
// patience.
func dial(ctx context.Context, t Target, c clock.Clock, patience time.Duration) (*ssh.Client, error) {
	waits := redialWaits(patience)
	for attempt := 0; ; attempt++ {
		client, err := dialOnce(ctx, t, c)
		if err == nil || attempt == len(waits) || !droppedEarly(err) {
			return client, err
		}
		if clock.Sleep(ctx, c, waits[attempt]) != nil {
			return nil, err
		}
	}
}

// droppedEarly reports whether the guest refused or cut the connection
// before authentication: nothing ran, so trying again is safe.
func droppedEarly(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

func dialOnce(ctx context.Context, t Target, c clock.Clock) (*ssh.Client, error) {
	signers := loadKeys(t.IdentityFiles)
	if len(signers) == 0 {
		return nil, fmt.Errorf("no usable private key among %v", t.IdentityFiles)
	}
	cfg := &ssh.ClientConfig{
		User: t.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		// Guests are this host's own VMs, reached on its loopback or a
		// host-only network, and regenerate their host keys at every boot;
		// Lima's own ssh.config disables host key checking for the same
		// reason.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
	addr := net.JoinHostPort(t.Host, t.Port)
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	conn, chans, reqs, err := handshake(ctx, c, nc, addr, cfg)
	if err != nil {
		return nil, err
	}
	client := ssh.NewClient(conn, chans, reqs)
	go keepAlive(client, c.NewTicker(30*time.Second))
	return client, nil
}

// handshakeFor bounds an SSH handshake: an emulated guest takes about a
// second, several seconds when forked children resume together.
const handshakeFor = 30 * time.Second

// handshake is ssh.NewClientConn bounded by ctx and by handshakeFor on c
// (the library bounds only ssh.Dial's, with cfg.Timeout): a guest that
// accepts the connection and then says nothing must not hold its caller,
// or a loop's pass, for good.
func handshake(ctx context.Context, c clock.Clock, nc net.Conn, addr string,
	cfg *ssh.ClientConfig) (ssh.Conn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	hctx, cancel := clock.WithTimeout(ctx, c, handshakeFor)
	defer cancel()
	stop := context.AfterFunc(hctx, func() { nc.Close() }) // runs once hctx says why
	conn, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if !stop() && err == nil { // hctx ended as the handshake did: nc is closed
		conn.Close()
		err = context.Cause(hctx)
	}
	if err == nil {
		return conn, chans, reqs, nil
	}
	nc.Close()
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	case hctx.Err() != nil:
		err = fmt.Errorf("no answer within %s (%v)", handshakeFor, err)
	}
	return nil, nil, nil, fmt.Errorf("SSH handshake with %s: %w", addr, err)
}

// loadKeys parses the private keys it can read; a target may list keys
// that do not exist on this host (ssh skips those too).
func loadKeys(paths []string) []ssh.Signer {
	var signers []ssh.Signer
	for _, path := range paths {
		key, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if s, err := ssh.ParsePrivateKey(key); err == nil {
			signers = append(signers, s)
		}
	}
	return signers
}

// keepAlive pings the server so a dead connection is noticed (and closed)
// instead of hanging the next command.
func keepAlive(c *ssh.Client, t clock.Ticker) {
	defer t.Stop()
	for range t.C() {
		if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
			c.Close()
			return
		}
	}
}
