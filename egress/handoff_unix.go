//go:build unix

package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// handOff gives the guest connection (descriptor fd, also open as guest)
// to the proxy listening on the unix socket at path, and waits until the
// proxy holds it. A proxy that answers instead (503 over its connection
// cap) has its answer passed to the guest.
func handOff(ctx context.Context, fd int, guest net.Conn, path string) error {
	d := net.Dialer{Timeout: RelayDialTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("egress relay: connecting to the proxy: %w", err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if _, _, err := uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(fd), nil); err != nil {
		return fmt.Errorf("egress relay: handing the connection to the proxy: %w", err)
	}
	uc.SetReadDeadline(clock.Real{}.Now().Add(RelayDialTimeout)) // a socket deadline is wall-clock
	b := make([]byte, 1)
	n, err := uc.Read(b)
	if n == 1 && b[0] == handoffAck {
		return nil
	}
	if n > 0 {
		guest.Write(b[:n])
		_, err = io.Copy(guest, uc)
	}
	if err == nil {
		err = errors.New("the proxy did not take the connection")
	}
	return fmt.Errorf("egress relay: %w", err)
}

// takeHandoff reads the first byte a client of the proxy's unix socket
// sends. A relay sends one carrying its guest connection (SCM_RIGHTS):
// that connection, a stream socket, is what gets served, and the relay is
// told so it can exit. Anything else is the start of an HTTP request,
// served on c itself.
func (p *Proxy) takeHandoff(c net.Conn) net.Conn {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c
	}
	uc.SetReadDeadline(p.deadline(p.cfg.HeaderTimeout))
	b, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(b, oob)
	uc.SetReadDeadline(time.Time{})
	fds := receivedFDs(oob[:oobn])
	if len(fds) == 0 {
		if err != nil {
			return uc // served as is: its first read fails the same way
		}
		return &prefixConn{Conn: uc, prefix: b[:n]}
	}
	for _, fd := range fds[1:] {
		syscall.Close(fd)
	}
	f := os.NewFile(uintptr(fds[0]), "guest")
	guest, err := net.FileConn(f)
	f.Close()
	if err != nil || !isStream(guest) {
		if guest != nil {
			guest.Close()
		}
		p.log(Entry{Decision: Denied, Reason: "a relay handed over something other than a stream socket"})
		return uc
	}
	uc.Write([]byte{handoffAck})
	uc.Close()
	return guest
}

func receivedFDs(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func isStream(c net.Conn) bool {
	switch v := c.(type) {
	case *net.TCPConn:
		return true
	case *net.UnixConn:
		return v.LocalAddr().Network() == "unix"
	}
	return false
}

// prefixConn reads the bytes already taken off the connection first.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
