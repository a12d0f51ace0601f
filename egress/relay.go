package egress

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// RelayDialTimeout bounds connecting to the proxy.
const RelayDialTimeout = 10 * time.Second

// RelayDrain is how long the guest side may go on sending after the proxy
// closed its side, before the relay gives up (a relay is one host process
// per guest connection: it must not outlive its use).
const RelayDrain = time.Minute

// handoffAck is the proxy's one-byte answer once it holds a handed-off
// guest connection (an HTTP answer starts with a letter).
const handoffAck = 0x06

// RelayStdio is the guestfwd command's body (`sbf egress-relay ADDR`): QEMU
// gives it one guest connection as stdin and stdout (and stderr: nothing
// may be printed, it would reach the guest). With a unix socket address it
// hands the connection itself to the proxy (its descriptor, SCM_RIGHTS)
// and exits once the proxy holds it: no host process stays per guest
// connection, and the proxy carries the bytes socket to socket. With a TCP
// address (a socket path too long), or stdin that is not a socket, it
// copies both ways until both are done. slots bounds how many relays of
// one VM run at once: with none free it returns ErrNoRelaySlot at once,
// and the guest sees its connection closed.
func RelayStdio(ctx context.Context, addr string, slots RelaySlots) error {
	release, err := slots.take()
	if err != nil {
		return err
	}
	defer release()
	// libslirp hands over one end of a loopback TCP pair; as a net.Conn it
	// can be half-closed, which os.Stdout cannot. Only a socket is tried:
	// net.FileConn sets O_NONBLOCK on the shared descriptor before it
	// checks, and a pipe's reads then fail (EAGAIN) whenever it is empty.
	if fi, err := os.Stdin.Stat(); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return Relay(ctx, stdio{}, addr)
	}
	c, err := net.FileConn(os.Stdin)
	if err != nil {
		return Relay(ctx, stdio{}, addr)
	}
	defer c.Close()
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return handOff(ctx, 0, c, path) // fd 0: stdin, the guest connection
	}
	return Relay(ctx, c, addr)
}

type stdio struct{}

func (stdio) Read(b []byte) (int, error)  { return os.Stdin.Read(b) }
func (stdio) Write(b []byte) (int, error) { return os.Stdout.Write(b) }

// Relay copies between guest and the proxy at addr until both directions
// are done: when the guest stops sending the proxy sees EOF, and when the
// proxy closes, the guest does (half-closed when guest is a net.Conn, which
// then has RelayDrain to finish sending).
func Relay(ctx context.Context, guest io.ReadWriter, addr string) error {
	network, address := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, address = "unix", path
	}
	d := net.Dialer{Timeout: RelayDialTimeout}
	proxy, err := d.DialContext(ctx, network, address)
	if err != nil {
		return fmt.Errorf("egress relay: connecting to the proxy: %w", err)
	}
	defer proxy.Close()
	stop := context.AfterFunc(ctx, func() { proxy.Close() })
	defer stop()
	up := make(chan error, 1)
	go func() {
		err := pump(proxy, guest)
		closeWrite(proxy)
		up <- err
	}()
	downErr := pump(guest, proxy)
	gc, isConn := guest.(net.Conn)
	if !isConn {
		return downErr // the process exits and closes the guest side
	}
	closeWrite(gc)
	// A socket deadline is a wall-clock instant.
	gc.SetReadDeadline(clock.Real{}.Now().Add(RelayDrain))
	<-up // the guest finished, reset, or ran past the drain: the proxy side is closed anyway
	return downErr
}
