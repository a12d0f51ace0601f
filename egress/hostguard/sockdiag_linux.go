//go:build linux && (amd64 || arm64)

package hostguard

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel's inet_diag structures (linux/inet_diag.h): a request for one
// family and protocol, and one message per socket.
const (
	diagRequestLen = 56 // struct inet_diag_req_v2
	diagMessageLen = 72 // struct inet_diag_msg
	tcpListenState = 10 // TCP_LISTEN
	// maxDiagBytes bounds what one look reads: listeners on one port, a
	// few messages; a kernel that ignored the port would list every
	// listener of the host, still far below this.
	maxDiagBytes = 4 << 20
)

// tcpListeners returns the inodes of the TCP sockets listening on to's
// port, at to's address or the unspecified one, of either family, as the
// kernel's sock_diag lists them. It asks for listeners on that port only:
// reading /proc/net/tcp walks every bucket of the established table too
// (262,144 on a 24 GiB host) and prints every connection of the host, while
// QEMU waits on its connect for the guard's answer (0.58 ms a read with a
// dozen sockets, against 0.26 ms for this and the caller's descriptors).
func tcpListeners(to netip.AddrPort) (map[uint32]bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("opening sock_diag: %w", err)
	}
	defer unix.Close(fd)
	found := map[uint32]bool{}
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := dumpListeners(fd, family, to, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// dumpListeners asks for one family's TCP listeners on to's port and adds
// the inodes of those bound to to's address or the unspecified one.
func dumpListeners(fd int, family uint8, to netip.AddrPort, found map[uint32]bool) error {
	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	if err := unix.Sendto(fd, listenerRequest(family, to.Port()), 0, kernel); err != nil {
		return fmt.Errorf("asking sock_diag for listeners: %w", err)
	}
	buf := make([]byte, 32<<10)
	for read := 0; read < maxDiagBytes; {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("reading sock_diag's answer: %w", err)
		}
		read += n
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("reading sock_diag's answer: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				return fmt.Errorf("sock_diag refused the request: %w", diagError(m.Data))
			}
			if inode, ok := listenerOn(m.Data, to); ok {
				found[inode] = true
			}
		}
	}
	return fmt.Errorf("sock_diag's answer went past %d bytes", maxDiagBytes)
}

// listenerRequest is a dump request for one family's TCP sockets in the
// listening state whose local port is port.
func listenerRequest(family uint8, port uint16) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+diagRequestLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	req := b[unix.NLMSG_HDRLEN:]
	req[0], req[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], 1<<tcpListenState)
	binary.BigEndian.PutUint16(req[8:], port) // idiag_sport: the kernel lists this port only
	return b
}

// listenerOn reads one inet_diag_msg: the socket's inode when it is bound
// to to's port at to's address or the unspecified one.
func listenerOn(msg []byte, to netip.AddrPort) (uint32, bool) {
	if len(msg) < diagMessageLen {
		return 0, false
	}
	port := binary.BigEndian.Uint16(msg[4:])
	var addr netip.Addr
	switch msg[0] {
	case unix.AF_INET:
		addr = netip.AddrFrom4([4]byte(msg[8:12]))
	case unix.AF_INET6:
		addr = netip.AddrFrom16([16]byte(msg[8:24])).Unmap()
	default:
		return 0, false
	}
	if port != to.Port() || addr != to.Addr().Unmap() && !addr.IsUnspecified() {
		return 0, false
	}
	return binary.NativeEndian.Uint32(msg[68:]), true
}

// diagError is the errno an NLMSG_ERROR carries.
func diagError(data []byte) error {
	if len(data) < 4 {
		return unix.EINVAL
	}
	return unix.Errno(-int32(binary.NativeEndian.Uint32(data)))
}
