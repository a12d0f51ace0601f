package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func mustPolicy(t testing.TB, mode string, allow ...string) Policy {
	t.Helper()
	p, err := ParsePolicy(mode, allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyCheck is the allow/deny matrix: name and address rules, ports,
// wildcards, IP literals, and names that resolve to special addresses.
func TestPolicyCheck(t *testing.T) {
	list := mustPolicy(t, "allowlist", "pypi.org", "*.githubusercontent.com", "api.example.com:8443",
		"10.20.0.0/16", "203.0.113.7:5432", "[2001:db8::5]", "127.0.0.1:8080")
	hostAddr := netip.MustParseAddr("198.51.100.77")
	tests := []struct {
		name   string
		pol    Policy
		host   string
		port   int
		addr   string
		want   bool
		reason string
	}{
		{"name allowed, public address", list, "pypi.org", 443, "151.101.0.223", true, "name rule"},
		{"name allowed, port 80", list, "pypi.org", 80, "151.101.0.223", true, "name rule"},
		{"name allowed, other port", list, "pypi.org", 22, "151.101.0.223", false, "not in the allowlist"},
		{"name not listed", list, "evil.org", 443, "151.101.0.223", false, "not in the allowlist"},
		{"wildcard subdomain", list, "raw.githubusercontent.com", 443, "185.199.108.133", true, "name rule"},
		{"wildcard apex", list, "githubusercontent.com", 443, "185.199.108.133", false, "not in the allowlist"},
		{"explicit port", list, "api.example.com", 8443, "93.184.216.34", true, "name rule"},
		{"explicit port only", list, "api.example.com", 443, "93.184.216.34", false, "not in the allowlist"},
		{"rebinding to loopback", list, "pypi.org", 443, "127.0.0.1", false, "loopback address"},
		{"rebinding to private", list, "pypi.org", 443, "192.168.1.10", false, "private address"},
		{"rebinding to link-local", list, "pypi.org", 443, "169.254.169.254", false, "link-local"},
		{"rebinding to CGNAT", list, "pypi.org", 443, "100.64.1.1", false, "CGNAT"},
		{"rebinding to unspecified", list, "pypi.org", 443, "0.0.0.0", false, "unspecified"},
		{"rebinding to multicast", list, "pypi.org", 443, "239.1.2.3", false, "multicast"},
		{"rebinding to ULA", list, "pypi.org", 443, "fd12::1", false, "private"},
		{"rebinding to v4-mapped loopback", list, "pypi.org", 443, "::ffff:127.0.0.1", false, "loopback"},
		{"rebinding to NAT64", list, "pypi.org", 443, "64:ff9b::a00:1", false, "NAT64"},
		{"rebinding to this host", list, "pypi.org", 443, "198.51.100.77", false, "this host's"},
		{"name to a listed private range", list, "pypi.org", 443, "10.20.3.4", true, "address rule"},
		{"loopback listed by IP rule", list, "pypi.org", 8080, "127.0.0.1", false, "not in the allowlist"},
		{"IP literal in CIDR", list, "10.20.3.4", 443, "10.20.3.4", true, "address rule"},
		{"IP literal in CIDR, other port", list, "10.20.3.4", 22, "10.20.3.4", false, "not in the allowlist"},
		{"IP literal with port rule", list, "203.0.113.7", 5432, "203.0.113.7", true, "address rule"},
		{"IP literal wrong port", list, "203.0.113.7", 443, "203.0.113.7", false, "not in the allowlist"},
		{"IP literal not listed", list, "151.101.0.223", 443, "151.101.0.223", false, "not in the allowlist"},
		{"IPv6 literal listed", list, "2001:db8::5", 443, "2001:db8::5", true, "address rule"},
		{"loopback literal listed", list, "127.0.0.1", 8080, "127.0.0.1", true, "address rule"},
		{"deny mode", mustPolicy(t, "deny", "pypi.org"), "pypi.org", 443, "151.101.0.223", false, "deny"},
		{"allow mode", mustPolicy(t, "allow"), "anything.org", 8080, "151.101.0.223", true, "allow"},
		{"allow mode, rebinding", mustPolicy(t, "allow"), "x.org", 443, "10.0.0.1", false, "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := tt.pol.Check(tt.host, tt.port, netip.MustParseAddr(tt.addr), []netip.Addr{hostAddr})
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Check(%s, %d, %s) = %v %q, want %v and a reason containing %q",
					tt.host, tt.port, tt.addr, got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestPolicyAllowsAndAllowsAddr(t *testing.T) {
	p := mustPolicy(t, "allowlist", "pypi.org", "10.20.0.0/16:5432")
	if !p.Allows("PYPI.org.", 443) {
		t.Error("Allows does not normalise the name")
	}
	if p.Allows("10.20.0.1", 5432) != p.AllowsAddr(netip.MustParseAddr("10.20.0.1"), 5432) {
		t.Error("Allows of an IP literal differs from AllowsAddr")
	}
	if !p.AllowsAddr(netip.MustParseAddr("::ffff:10.20.9.9"), 5432) {
		t.Error("AllowsAddr does not unmap IPv4-mapped addresses")
	}
	if p.AllowsAddr(netip.MustParseAddr("10.21.0.1"), 5432) {
		t.Error("AllowsAddr allowed an address outside the range")
	}
}
