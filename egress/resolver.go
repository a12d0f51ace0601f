package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Resolver resolves a host name to addresses. *net.Resolver satisfies it.
// The proxy resolves each name once and dials the addresses it checked, so
// an answer that changes between check and dial cannot slip through.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer opens upstream connections. *net.Dialer satisfies it.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// StaticResolver answers from a fixed map of lower-case names to addresses,
// for tests and end-to-end runs that must not touch real DNS (map a public
// name to 127.0.0.1 and allow 127.0.0.1 by an address rule). Unknown names
// fail as a DNS "no such host" would.
type StaticResolver map[string][]string

// LookupIPAddr implements Resolver.
func (s StaticResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs, ok := s[NormalizeHost(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(addrs))
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("static resolver entry %q for %s: %w", a, host, err)
		}
		out = append(out, net.IPAddr{IP: ip.AsSlice()})
	}
	return out, nil
}

// resolve returns host's addresses: host itself when it is an IP literal,
// else the resolver's answer.
func resolve(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return nil, fmt.Errorf("address %s has a zone", host)
		}
		return []netip.Addr{ip.Unmap()}, nil
	}
	ipas, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ipas))
	for _, ipa := range ipas {
		if ip, ok := netip.AddrFromSlice(ipa.IP); ok {
			out = append(out, ip.Unmap())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no address for %s", host)
	}
	return out, nil
}

// interfaceAddrs lists this host's own addresses, which a name rule must not
// reach (a guest would otherwise get at services bound to a public address).
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		s := a.String()
		if i := strings.IndexByte(s, '/'); i >= 0 {
			s = s[:i]
		}
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}
