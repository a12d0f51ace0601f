package egress

import (
	"fmt"
	"net/netip"
)

// Mode is the sandbox's egress mode ([network] egress).
type Mode string

const (
	// ModeAllow leaves the network as the driver gives it (the default).
	ModeAllow Mode = "allow"
	// ModeDeny gives the guest no route out at all (QEMU: restrict=on, no proxy).
	ModeDeny Mode = "deny"
	// ModeAllowlist lets the guest out only through the proxy, to the rules.
	ModeAllowlist Mode = "allowlist"
)

// ParseMode reads a mode; "" is the default, ModeAllow.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "":
		return ModeAllow, nil
	case ModeAllow, ModeDeny, ModeAllowlist:
		return Mode(s), nil
	}
	return "", fmt.Errorf("egress %q: want \"allow\", \"deny\" or \"allowlist\"", s)
}

// Policy is what a sandbox may reach. Rules matter only in ModeAllowlist.
type Policy struct {
	Mode  Mode
	Rules []Rule
}

// ParsePolicy builds a policy from the spec's values. A bad mode is a plain
// error; bad entries are RuleErrors. Entries given with a mode other than
// allowlist are parsed (and so validated) but have no effect.
func ParsePolicy(mode string, allow []string) (Policy, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return Policy{}, err
	}
	rules, err := ParseRules(allow)
	if err != nil {
		return Policy{}, err
	}
	return Policy{Mode: m, Rules: rules}, nil
}

// Allows reports whether the policy allows connecting to host:port by name,
// before resolution. An IP literal host is judged by the address rules only.
// Allowed by name is not enough to connect: see Check.
func (p Policy) Allows(host string, port int) bool {
	switch p.Mode {
	case ModeAllow:
		return true
	case ModeDeny:
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.AllowsAddr(ip, port)
	}
	host = NormalizeHost(host)
	for _, r := range p.Rules {
		if r.MatchesName(host, port) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether an address rule (IP or CIDR) explicitly allows
// ip:port, whatever name led there.
func (p Policy) AllowsAddr(ip netip.Addr, port int) bool {
	switch p.Mode {
	case ModeAllow:
		return true
	case ModeDeny:
		return false
	}
	for _, r := range p.Rules {
		if r.MatchesAddr(ip, port) {
			return true
		}
	}
	return false
}

// Check decides whether a connection to host:port may go to addr, one of the
// addresses host resolved to (or host itself when it is an IP literal).
// An IP literal needs an address rule. A name needs a name rule (and the
// proxy resolves only names that have one: a lookup of an arbitrary name is
// itself a way out); its addresses must then be public, or listed by an
// address rule, so a name that resolves to a private, loopback, link-local
// or this host's address (DNS rebinding) is refused. hostAddrs are the
// host's own addresses. The reason says why, for the log.
func (p Policy) Check(host string, port int, addr netip.Addr, hostAddrs []netip.Addr) (bool, string) {
	addr = addr.Unmap()
	if p.Mode == ModeDeny {
		return false, "egress is deny"
	}
	_, err := netip.ParseAddr(host)
	isIP := err == nil
	if !isIP && !p.Allows(host, port) {
		return false, fmt.Sprintf("%s port %d is not in the allowlist", host, port)
	}
	if p.Mode == ModeAllowlist && p.AllowsAddr(addr, port) {
		return true, "address rule"
	}
	if isIP && p.Mode == ModeAllowlist {
		return false, fmt.Sprintf("address %s port %d is not in the allowlist", addr, port)
	}
	if class := specialClass(addr, hostAddrs); class != "" {
		return false, fmt.Sprintf("%s resolves to %s address %s: only an IP or CIDR rule allows it",
			host, class, addr)
	}
	if p.Mode == ModeAllow {
		return true, "egress is allow"
	}
	return true, "name rule"
}

// specialClass names why addr is not a public destination, "" when it is.
func specialClass(addr netip.Addr, hostAddrs []netip.Addr) string {
	addr = addr.Unmap()
	for _, h := range hostAddrs {
		if h.Unmap() == addr {
			return "this host's"
		}
	}
	switch {
	case addr.IsLoopback():
		return "a loopback"
	case addr.IsPrivate():
		return "a private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local"
	case addr.IsUnspecified():
		return "an unspecified"
	case addr.IsMulticast():
		return "a multicast"
	}
	for _, s := range specialRanges {
		if s.prefix.Contains(addr) {
			return s.class
		}
	}
	return ""
}

// specialRanges are the non-global ranges netip has no predicate for (IANA's
// special-purpose registries), and IPv6 forms that embed an IPv4 address.
var specialRanges = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF-reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64"},
	{netip.MustParsePrefix("100::/64"), "a discard"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4"},
}
