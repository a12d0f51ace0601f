package hostguard

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// Address families as Linux numbers them (the supervisor reads raw socket
// addresses from QEMU's memory).
const (
	afUnspec  = 0
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// target is what a socket address names: an IP address and port, or a
// family that never leaves this host's kernel (unix, netlink) or that the
// guard does not know.
type target struct {
	family uint16
	addr   netip.AddrPort // for afInet and afInet6
}

// parseSockaddr reads a struct sockaddr in the host's byte order (the
// family) and network order (port, address). ok is false when the bytes
// are too short for the family they name.
func parseSockaddr(b []byte) (target, bool) {
	if len(b) < 2 {
		return target{}, false
	}
	t := target{family: binary.NativeEndian.Uint16(b)}
	switch t.family {
	case afInet:
		if len(b) < 8 {
			return t, false
		}
		t.addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
	case afInet6:
		if len(b) < 24 {
			return t, false
		}
		t.addr = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:4]))
	}
	return t, true
}

// judgeTarget decides a parsed address: unix, netlink and unspec (a UDP
// disconnect) go on; an IP address is judged by the rules; any other
// family (vsock, packet, …) is refused, since slirp uses none.
func (r Rules) judgeTarget(t target, host Host) (bool, string) {
	switch t.family {
	case afUnix, afNetlink, afUnspec:
		return true, ""
	case afInet, afInet6:
		return r.Judge(t.addr, host)
	}
	return false, "address family " + strconv.Itoa(int(t.family)) + " is not one slirp uses"
}
