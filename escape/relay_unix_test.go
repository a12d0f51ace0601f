//go:build unix

package escape

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// Finding 9 of issue 29 (part): a guest opening 300 connections to its
// egress proxy started 301 `sbf egress-relay` processes, each held for its
// connection's life (~13 MB resident each). Now a relay hands its
// connection to the proxy and exits, and at most --max run at once per VM:
// here 2N guest connections reach relays (as QEMU's guestfwd starts them)
// while the proxy takes none; N wait holding their slots, the other N end
// at once with the guest's connection closed. Once the proxy takes the
// connections, no relay process is left, and the connections stay open.
func TestGuestConnectionsHoldNoHostProcess(t *testing.T) {
	t.Parallel()
	const n = 6
	dir := t.TempDir()
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	handed := make(chan net.Conn, 2*n)
	go takeHandoffs(ln, handed)
	relays := make(chan relayRun, 2*n)
	for range 2 * n {
		startRelay(t, []string{"egress-relay", "--slots", filepath.Join(dir, "relays"), "--max", strconv.Itoa(n),
			"unix:" + sock}, relays)
	}
	var waiting []net.Conn
	for range n {
		waiting = append(waiting, within(t, handed, "a relay reaching the proxy"))
	}
	for range n { // with n waiting, the first n to end are the others
		r := within(t, relays, "a relay without a slot ending")
		if r.err == nil {
			t.Error("a relay without a slot succeeded")
		}
		if b, _ := io.ReadAll(r.guest); len(b) != 0 {
			t.Errorf("a refused guest read %q", b)
		}
	}
	if len(handed) != 0 {
		t.Errorf("%d more relays than --max reached the proxy", len(handed))
	}
	for _, c := range waiting {
		c.Write([]byte{0x06}) // the proxy holds the connection
		c.Close()
	}
	var guests []net.Conn
	for range n {
		r := within(t, relays, "a relay the proxy took ending")
		if r.err != nil {
			t.Errorf("a relay the proxy took: %v", r.err)
		}
		guests = append(guests, r.guest)
	}
	for _, g := range guests { // no relay left, and each connection still open: now the proxy's
		g.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := g.Read(make([]byte, 1)); !os.IsTimeout(err) {
			t.Errorf("a handed-over guest connection ended with its relay: %v", err)
		}
	}
}

type relayRun struct {
	guest net.Conn
	err   error
}

// startRelay runs sbf's relay on one end of a new loopback TCP connection,
// as libslirp does for a guest connection, and reports its end.
func startRelay(t *testing.T, args []string, done chan<- relayRun) {
	testutil.CoverSources(t) // it runs sbf without a helper that does
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	guest, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guest.Close() })
	qemuEnd, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := qemuEnd.(*net.TCPConn).File()
	qemuEnd.Close()
	c := exec.Command(sbfBinary, args...)
	c.Stdin, c.Stdout, c.Stderr = f, f, f
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	go func() { done <- relayRun{guest, c.Wait()} }()
}

// takeHandoffs accepts relays and receives the connection each hands over
// (it stays open in this process), answering none.
func takeHandoffs(ln net.Listener, handed chan<- net.Conn) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		oob := make([]byte, syscall.CmsgSpace(4))
		if _, _, _, _, err := c.(*net.UnixConn).ReadMsgUnix(make([]byte, 1), oob); err != nil {
			c.Close()
			continue
		}
		handed <- c
	}
}

// within receives from ch, failing t if nothing comes in a minute (a relay
// that hangs must fail the test, not stall the suite).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
	var zero T
	return zero
}
