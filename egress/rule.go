package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a rule allows when it names none: HTTP and HTTPS.
var DefaultPorts = []int{80, 443}

// Rule is one entry of an allowlist. Exactly one of Host and Prefix is set.
type Rule struct {
	// Entry is the entry as written, for messages.
	Entry string
	// Host is a lower-case DNS name. With Wildcard it is the suffix after
	// "*.", and the rule matches names below it but not the name itself:
	// "*.example.com" matches "a.example.com" and "a.b.example.com", not
	// "example.com" (list both to allow both).
	Host     string
	Wildcard bool
	// Prefix is an address range; an IP literal is a single-address prefix.
	// Address rules are the only ones that can allow a private, loopback or
	// link-local destination.
	Prefix netip.Prefix
	// Ports the rule allows: the one written after the host, else DefaultPorts.
	Ports []int
}

// IsAddr reports whether the rule is an address (IP or CIDR) rule.
func (r Rule) IsAddr() bool { return r.Prefix.IsValid() }

// MatchesName reports whether a name rule allows host:port. host must be
// normalised (NormalizeHost); address rules never match a name.
func (r Rule) MatchesName(host string, port int) bool {
	if r.IsAddr() || !r.allowsPort(port) {
		return false
	}
	if r.Wildcard {
		return len(host) > len(r.Host)+1 && strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// MatchesAddr reports whether an address rule allows ip:port.
func (r Rule) MatchesAddr(ip netip.Addr, port int) bool {
	return r.IsAddr() && r.allowsPort(port) && r.Prefix.Contains(ip.Unmap())
}

func (r Rule) allowsPort(port int) bool {
	for _, p := range r.Ports {
		if p == port {
			return true
		}
	}
	return false
}

// RuleError says which allowlist entry is wrong and why. Index counts from 0
// in the list given to ParseRules, so a validator can point at the entry.
type RuleError struct {
	Index  int
	Entry  string
	Reason string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("allow entry %d (%q): %s", e.Index+1, e.Entry, e.Reason)
}

// RuleErrors is every bad entry of a list, in order.
type RuleErrors []*RuleError

func (es RuleErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find each *RuleError.
func (es RuleErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// ParseRules parses every entry and reports every bad one (as RuleErrors).
func ParseRules(entries []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(entries))
	var bad RuleErrors
	for i, entry := range entries {
		r, err := ParseRule(entry)
		if err != nil {
			var re *RuleError
			errors.As(err, &re)
			re.Index = i
			bad = append(bad, re)
			continue
		}
		rules = append(rules, r)
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return rules, nil
}

// ParseRule parses one entry: "pypi.org", "*.githubusercontent.com",
// "api.example.com:8443", "203.0.113.7", "2001:db8::1", "[2001:db8::1]:8443",
// "10.20.0.0/16", "10.20.0.0/16:5432", "[fd00::/8]:443". The error is a
// *RuleError (Index 0).
func ParseRule(entry string) (Rule, error) {
	r, reason := parseRule(strings.TrimSpace(entry))
	if reason != "" {
		return Rule{}, &RuleError{Entry: entry, Reason: reason}
	}
	r.Entry = entry
	return r, nil
}

func parseRule(s string) (Rule, string) {
	switch {
	case s == "":
		return Rule{}, "empty entry"
	case strings.Contains(s, "://"):
		return Rule{}, `a rule is a host, not a URL: drop the scheme (e.g. "pypi.org" or "pypi.org:443")`
	}
	main, port, reason := splitPort(s)
	if reason != "" {
		return Rule{}, reason
	}
	ports := DefaultPorts
	if port != 0 {
		ports = []int{port}
	}
	if strings.Contains(main, "/") {
		p, reason := parsePrefix(main)
		return Rule{Prefix: p, Ports: ports}, reason
	}
	if ip, err := netip.ParseAddr(main); err == nil {
		if ip.Zone() != "" {
			return Rule{}, "an address with a zone (%) cannot be allowed"
		}
		ip = ip.Unmap()
		return Rule{Prefix: netip.PrefixFrom(ip, ip.BitLen()), Ports: ports}, ""
	}
	host, wildcard := strings.CutPrefix(strings.ToLower(main), "*.")
	host = strings.TrimSuffix(host, ".")
	if reason := checkHostName(host, wildcard); reason != "" {
		return Rule{}, reason
	}
	return Rule{Host: host, Wildcard: wildcard, Ports: ports}, ""
}

// splitPort separates an optional ":port" from the host, address or CIDR.
func splitPort(s string) (main string, port int, reason string) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		inside, after, found := strings.Cut(rest, "]")
		if !found {
			return "", 0, `missing "]" after an IPv6 address`
		}
		if after == "" {
			return inside, 0, ""
		}
		p, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", 0, `only ":PORT" may follow "]"`
		}
		port, reason := parsePort(p)
		return inside, port, reason
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, ""
	case 1:
		host, p, _ := strings.Cut(s, ":")
		port, reason := parsePort(p)
		return host, port, reason
	default: // a bare IPv6 address or range; a port needs brackets
		return s, 0, ""
	}
}

func parsePort(s string) (int, string) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strings.HasPrefix(s, "+") {
		return 0, fmt.Sprintf("port %q is not a number from 1 to 65535", s)
	}
	return n, ""
}

func parsePrefix(s string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("not an address range (CIDR): %v", err)
	}
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		if p.Bits() < 0 {
			return netip.Prefix{}, "an IPv4-mapped range must be at least /96"
		}
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Sprintf("host bits are set; did you mean %s?", m)
	}
	return p, ""
}

// checkHostName accepts ASCII DNS names (letters, digits, '-', '_'), and for
// a wildcard a suffix of at least two labels, so "*.com" is refused.
func checkHostName(host string, wildcard bool) string {
	if host == "" {
		return "empty host name"
	}
	if strings.Contains(host, "*") {
		return `a wildcard must be the whole first label, as in "*.example.com"`
	}
	if len(host) > 253 {
		return "host name longer than 253 characters"
	}
	labels := strings.Split(host, ".")
	if wildcard && len(labels) < 2 {
		return fmt.Sprintf("wildcard too broad: *.%s would match a whole top-level domain", host)
	}
	for _, l := range labels {
		if reason := checkLabel(l); reason != "" {
			return reason
		}
	}
	return ""
}

func checkLabel(l string) string {
	if l == "" || len(l) > 63 {
		return "each dot-separated label must have 1 to 63 characters"
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Sprintf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if c >= 0x80 {
			return `non-ASCII name: write its punycode ("xn--…") form`
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Sprintf("character %q is not allowed in a host name", c)
		}
	}
	return ""
}

// NormalizeHost lower-cases a host name and drops one trailing dot, the form
// rules are matched against.
func NormalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
