//go:build linux && (amd64 || arm64)

package hostguard

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
)

// The guard's look-up of the listeners on a port (sock_diag, not the /proc
// tables): this process's listener at the address asked or the wildcard is
// found, by its inode; a connection on the same port, the same port at
// another address and another port are not.
func TestTCPListenersFindsTheListenersOfOnePort(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	conn, err := net.Dial("tcp4", addr.String()) // its accepted end has the listener's local port
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	wild, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	wildPort := uint16(wild.Addr().(*net.TCPAddr).Port)
	own := socketInodes(os.Getpid())
	for _, c := range []struct {
		to   netip.AddrPort
		want int
	}{
		{addr, 1},
		{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), addr.Port()), 0},
		{netip.AddrPortFrom(addr.Addr(), wildPort), 1},
		{netip.AddrPortFrom(addr.Addr(), addr.Port()+1), 0},
	} {
		got, err := tcpListeners(c.to)
		if err != nil {
			t.Fatalf("tcpListeners(%s): %v", c.to, err)
		}
		for inode := range got {
			if !own[strconv.FormatUint(uint64(inode), 10)] {
				t.Errorf("tcpListeners(%s) listed inode %d, not one of this process's sockets", c.to, inode)
			}
		}
		if len(got) != c.want {
			t.Errorf("tcpListeners(%s) = %v, want %d listener(s)", c.to, got, c.want)
		}
	}
	if !processListens(os.Getpid(), true, addr) || processListens(os.Getpid(), true, netip.AddrPortFrom(addr.Addr(),
		addr.Port()+1)) {
		t.Errorf("processListens: this process listens on %s and not on the port after it", addr)
	}
}
