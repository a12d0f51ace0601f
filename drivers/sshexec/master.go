package sshexec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// An OpenSSH master (ControlMaster) holds a connection to a guest and opens
// sessions on it for any process that asks on its control socket; Lima
// keeps one per running instance. A process that has no connection of its
// own yet starts its guest shells there: a session on a connection already
// made costs the guest a fork (0.13–0.19 s under emulation, measured
// 2026-12-01), where a connection of its own costs a key exchange, an
// authentication and a PAM session first (about 1.35 s).
//
// The protocol is OpenSSH's PROTOCOL.mux (version 4): length-prefixed
// packets, a hello each way, then a session request followed by the
// session's stdin, stdout and stderr passed as file descriptors. A master
// serves one session per control connection.
const (
	muxHello           = 0x00000001
	muxNewSession      = 0x10000002
	muxAliveCheck      = 0x10000004
	muxOpenFwd         = 0x10000006
	muxCloseFwd        = 0x10000007
	muxOK              = 0x80000001
	muxFwdLocal        = 1
	muxPermDenied      = 0x80000002
	muxFailure         = 0x80000003
	muxExitMessage     = 0x80000004
	muxAlive           = 0x80000005
	muxSessionOpened   = 0x80000006
	muxVersion         = 4
	muxNoEscape        = 0xffffffff
	muxPortStreamLocal = 0xfffffffe // PORT_STREAMLOCAL (-2): the host is a socket path
	muxMaxPacket       = 256 << 10  // a master's replies are a few words; a longer one is not a master's
	muxHandshakeBound  = 10 * time.Second
)

// ErrNoMaster says the target names no usable master: the caller connects
// itself.
var ErrNoMaster = errors.New("no OpenSSH master answers")

// masterSession is a session a master opened: the command's stdin,
// stdout and stderr, and the control connection whose end ends it.
type masterSession struct {
	ctl    net.Conn
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser
}

// Close ends the session: the master closes a session whose control
// connection is gone, and the command reads the end of its stdin.
func (s *masterSession) Close() error {
	s.stdin.Close()
	s.stdout.Close()
	s.stderr.Close()
	return s.ctl.Close()
}

// wait returns the command's exit status once the master reports it, or
// -1 when the master closes the control connection without one.
func (s *masterSession) wait() int {
	for {
		typ, body, err := readMux(s.ctl)
		if err != nil {
			return -1
		}
		if typ == muxExitMessage && len(body) >= 8 {
			return int(binary.BigEndian.Uint32(body[4:8]))
		}
	}
}

// openMasterSession asks the master at controlPath to run command. It
// gives up when ctx ends or the master does not answer within
// muxHandshakeBound; nothing has run then.
func openMasterSession(ctx context.Context, controlPath, command string) (*masterSession, error) {
	ctl, err := dialMaster(ctx, controlPath)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { ctl.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	s, err := requestSession(ctl, command)
	if err != nil {
		ctl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("opening a session through the OpenSSH master at %s: %w", controlPath, err)
	}
	return s, nil
}

// masterAlive reports whether the master at controlPath answers within
// muxHandshakeBound.
func masterAlive(controlPath string) bool {
	ctl, err := greetMaster(controlPath, func(d *net.Dialer) (net.Conn, error) { return d.Dial("unix", controlPath) })
	if err != nil {
		return false
	}
	defer ctl.Close()
	if err := writeMux(ctl, muxAliveCheck, u32(0)); err != nil {
		return false
	}
	typ, _, err := readMux(ctl)
	return err == nil && typ == muxAlive
}

// dialMaster connects to a control socket this user owns (Lima's instance
// folder is the operator's; a socket someone else made is not asked) and
// exchanges hellos.
func dialMaster(ctx context.Context, controlPath string) (net.Conn, error) {
	return greetMaster(controlPath, func(d *net.Dialer) (net.Conn, error) {
		return d.DialContext(ctx, "unix", controlPath)
	})
}

func greetMaster(controlPath string, dial func(*net.Dialer) (net.Conn, error)) (net.Conn, error) {
	if controlPath == "" {
		return nil, ErrNoMaster
	}
	if err := ownSocket(controlPath); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMaster, err)
	}
	ctl, err := dial(&net.Dialer{Timeout: muxHandshakeBound})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMaster, err)
	}
	ctl.SetDeadline(clock.Real{}.Now().Add(muxHandshakeBound)) // a socket deadline is a wall-clock instant
	if err := hello(ctl); err != nil {
		ctl.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrNoMaster, controlPath, err)
	}
	return ctl, nil
}

func hello(ctl net.Conn) error {
	if err := writeMux(ctl, muxHello, u32(muxVersion)); err != nil {
		return err
	}
	typ, body, err := readMux(ctl)
	switch {
	case err != nil:
		return err
	case typ != muxHello || len(body) < 4:
		return fmt.Errorf("the master's first message is %#x, not a hello", typ)
	case binary.BigEndian.Uint32(body) != muxVersion:
		return fmt.Errorf("the master speaks version %d of the protocol, not %d",
			binary.BigEndian.Uint32(body), muxVersion)
	}
	return nil
}

// requestSession asks for a session without a terminal, X11 or agent
// forwarding (whatever the master allows), running command with three
// pipes of ours as its stdio.
func requestSession(ctl net.Conn, command string) (*masterSession, error) {
	var req bytes.Buffer
	req.Write(u32(0))        // request id
	req.Write(muxString("")) // reserved
	for range 4 {            // tty, X11 forwarding, agent forwarding, subsystem: none
		req.Write(u32(0))
	}
	req.Write(u32(muxNoEscape))
	req.Write(muxString("")) // terminal type
	req.Write(muxString(command))
	if err := writeMux(ctl, muxNewSession, req.Bytes()); err != nil {
		return nil, err
	}
	s, theirs, err := sessionPipes(ctl)
	if err != nil {
		return nil, err
	}
	err = sendFiles(ctl, theirs)
	for _, f := range theirs {
		f.Close() // the master has its own copies now
	}
	if err == nil {
		err = muxAnswer(ctl, muxSessionOpened, "session")
	}
	if err != nil {
		s.stdin.Close()
		s.stdout.Close()
		s.stderr.Close()
		return nil, err
	}
	ctl.SetDeadline(time.Time{})
	return s, nil
}

// sessionPipes makes the session's stdio: our ends in the session, the
// master's to pass.
func sessionPipes(ctl net.Conn) (*masterSession, [3]*os.File, error) {
	var ours, theirs [3]*os.File
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			for j := range i {
				ours[j].Close()
				theirs[j].Close()
			}
			return nil, theirs, err
		}
		if i == 0 { // the command reads its stdin; we write it
			ours[i], theirs[i] = w, r
		} else {
			ours[i], theirs[i] = r, w
		}
	}
	return &masterSession{ctl: ctl, stdin: ours[0], stdout: ours[1], stderr: ours[2]}, theirs, nil
}

// muxAnswer reads the master's answer to a request for what: nil when it
// is want, else why not.
func muxAnswer(ctl net.Conn, want uint32, what string) error {
	typ, body, err := readMux(ctl)
	switch {
	case err != nil:
		return err
	case typ == want:
		return nil
	case (typ == muxPermDenied || typ == muxFailure) && len(body) >= 8:
		return fmt.Errorf("the master refused the %s: %s", what, body[8:])
	}
	return fmt.Errorf("the master answered the %s request with %#x", what, typ)
}

func writeMux(w io.Writer, typ uint32, body []byte) error {
	packet := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(packet, uint32(4+len(body)))
	binary.BigEndian.PutUint32(packet[4:], typ)
	_, err := w.Write(append(packet, body...))
	return err
}

// readMux reads one packet: its type and what follows it.
func readMux(r io.Reader) (uint32, []byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 4 || n > muxMaxPacket {
		return 0, nil, fmt.Errorf("a packet of %d bytes from the master", n)
	}
	packet := make([]byte, n)
	if _, err := io.ReadFull(r, packet); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(packet), packet[4:], nil
}

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func muxString(s string) []byte { return append(u32(uint32(len(s))), s...) }
