package hostguard

import (
	"fmt"
	"net/netip"
	"slices"
)

// Rules are what a guarded QEMU may still reach on this host.
type Rules struct {
	// Ports are the operator's [policy] guest_host_ports: any host address
	// on these ports may be reached (TCP and UDP).
	Ports []int `json:"ports,omitempty"`
	// Nameservers are the resolvers slirp's DNS alias forwards to (the
	// host's /etc/resolv.conf): port 53 on exactly these stays open.
	Nameservers []netip.Addr `json:"-"`
	// Endpoints are exact addresses that stay open: the egress proxy's own
	// loopback address when it cannot use a unix socket.
	Endpoints []netip.AddrPort `json:"endpoints,omitempty"`
}

// Host is this machine's own addresses, and the broadcast addresses of its
// networks: sending there reaches the host's own services too.
type Host struct {
	Addrs []netip.Addr
}

// Judge says whether a connection or datagram to to may go, and if not,
// why. Addresses are compared unmapped (::ffff:127.0.0.1 is 127.0.0.1) and
// without zone.
func (r Rules) Judge(to netip.AddrPort, host Host) (ok bool, reason string) {
	addr := to.Addr().Unmap().WithZone("")
	to = netip.AddrPortFrom(addr, to.Port())
	what := hostKind(addr, host)
	switch {
	case what == "":
		return true, ""
	case slices.Contains(r.Endpoints, to):
		return true, ""
	case to.Port() == 53 && slices.Contains(r.Nameservers, addr):
		return true, ""
	case slices.Contains(r.Ports, int(to.Port())):
		return true, ""
	}
	return false, fmt.Sprintf("%s is %s, and port %d is not in [policy] guest_host_ports", to, what, to.Port())
}

// hostKind names what makes addr a way into this host, or "" when it is
// not one.
func hostKind(addr netip.Addr, host Host) string {
	switch {
	case !addr.IsValid():
		return "no address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsUnspecified() || addr.Is4() && addr.As4()[0] == 0:
		return "an unspecified address (this host)"
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	case addr.IsMulticast():
		return "a multicast address (this host's listeners receive it)"
	case slices.Contains(host.Addrs, addr):
		return "an address of this host"
	}
	return ""
}
