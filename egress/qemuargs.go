package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ProxyGuestAddr is where a restricted guest reaches the egress proxy. It
// must be inside QEMU's user network (Lima: 192.168.5.0/24) and be neither
// slirp's gateway (.2, the host) nor its DNS (.3), which libslirp refuses,
// nor in the DHCP pool (Lima: dhcpstart=192.168.5.15, 16 leases). .4 is
// slirp's conventional service address (its smb server's default, on ports
// 139/445; guestfwd matches address and port, and Lima sets no smb); 3128
// is the customary proxy port.
var ProxyGuestAddr = netip.MustParseAddrPort("192.168.5.4:3128")

// Restriction is how RestrictNetdev rewrites QEMU's user network.
type Restriction struct {
	// Relay is the command QEMU runs for each guest connection to GuestAddr,
	// its stdin and stdout being that connection (argv[0] should be an
	// absolute path). Nil means no way out at all (egress = "deny").
	Relay []string
	// GuestAddr is the proxy's address in the guest; zero is ProxyGuestAddr.
	GuestAddr netip.AddrPort
}

// RestrictNetdev rewrites the `-netdev user,…` argument of a QEMU command
// line (as Lima v1.2.1 builds it) so the guest reaches neither the host nor
// the outside: it adds restrict=on (libslirp then drops every guest packet
// except DHCP, TFTP and connections to a guestfwd; Lima's SSH hostfwd keeps
// working), ipv6=off (libslirp's restrict check is IPv4-only), and, with a
// Relay, one guestfwd=tcp:ADDR:PORT-cmd:RELAY. Every other argument is kept
// as is. It refuses a command line with no user netdev, more than one, any
// other network backend (socket, tap, vde, …: a route the rewrite cannot
// close), -net/-nic, or a guestfwd of its own. Running it on its own output
// gives the same result.
//
// The guestfwd is a command, not a chardev (tcp:127.0.0.1:PORT): QEMU opens
// a chardev once at start and feeds every guest connection to the address
// into that one stream, with no boundaries, so only one connection could
// ever work. A cmd: target gets a fresh process, and so a fresh proxy
// connection, per guest connection.
func RestrictNetdev(argv []string, r Restriction) ([]string, error) {
	if !r.GuestAddr.IsValid() {
		r.GuestAddr = ProxyGuestAddr
	}
	out := append([]string(nil), argv...)
	userAt, err := userNetdev(out)
	if err != nil {
		return nil, err
	}
	v, err := restrictUserNetdev(out[userAt], r)
	if err != nil {
		return nil, fmt.Errorf("restricting -netdev %q: %w", out[userAt], err)
	}
	out[userAt] = v
	return out, nil
}

// userNetdev finds the one -netdev user,… value of a QEMU command line,
// refusing any other network backend (socket, tap, vde, …: a route around
// slirp), -net/-nic and a second user netdev.
func userNetdev(out []string) (int, error) {
	userAt := -1
	for i := 0; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "-net" || a == "--net" || a == "-nic" || a == "--nic":
			return -1, fmt.Errorf("QEMU argument %s: only -netdev user can be restricted", a)
		case strings.HasPrefix(a, "-netdev=") || strings.HasPrefix(a, "--netdev="):
			return -1, fmt.Errorf("QEMU argument %q: write -netdev and its value as two arguments", a)
		case a != "-netdev" && a != "--netdev":
			continue
		}
		if i+1 == len(out) {
			return -1, errors.New("QEMU argument -netdev has no value")
		}
		i++
		kind, _, _ := strings.Cut(out[i], ",")
		if kind != "user" {
			return -1, fmt.Errorf("-netdev %q gives the guest a network sbf cannot restrict", out[i])
		}
		if userAt >= 0 {
			return -1, errors.New("more than one -netdev user: sbf restricts exactly one")
		}
		userAt = i
	}
	if userAt < 0 {
		return -1, errors.New("no -netdev user,… in the QEMU command line to restrict")
	}
	return userAt, nil
}

func restrictUserNetdev(value string, r Restriction) (string, error) {
	opts := splitQemuOpts(value)
	var fwd string
	if r.Relay != nil {
		if len(r.Relay) == 0 || r.Relay[0] == "" {
			return "", errors.New("the relay command is empty")
		}
		if err := checkGuestAddr(opts, r.GuestAddr.Addr()); err != nil {
			return "", err
		}
		fwd = fmt.Sprintf("guestfwd=tcp:%s-cmd:%s", r.GuestAddr, shellJoin(r.Relay))
	}
	kept := opts[:0]
	for _, o := range opts {
		key, _, _ := strings.Cut(o, "=")
		switch key {
		case "restrict", "ipv6":
			continue
		case "guestfwd":
			if o != fwd {
				return "", fmt.Errorf("it already has %q, a way out the policy does not know", o)
			}
			continue
		}
		kept = append(kept, o)
	}
	kept = append(kept, "restrict=on", "ipv6=off")
	if fwd != "" {
		kept = append(kept, fwd)
	}
	return joinQemuOpts(kept), nil
}

// checkGuestAddr refuses a proxy address libslirp would reject or that the
// guest could be given by DHCP.
func checkGuestAddr(opts []string, addr netip.Addr) error {
	vals := map[string]string{"net": "10.0.2.0/24"}
	for _, o := range opts {
		if k, v, ok := strings.Cut(o, "="); ok {
			vals[k] = v
		}
	}
	network, err := netip.ParsePrefix(vals["net"])
	if err != nil {
		return fmt.Errorf("reading net=%s: %w", vals["net"], err)
	}
	network = network.Masked()
	if !addr.Is4() || !network.Contains(addr) {
		return fmt.Errorf("proxy address %s is not in the guest network %s", addr, network)
	}
	base := network.Addr().As4()
	at := func(host uint32) netip.Addr {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(base[:])|host)
		return netip.AddrFrom4(b)
	}
	reserved := map[string]netip.Addr{"host": at(2), "dns": at(3)}
	for k := range reserved {
		if a, err := netip.ParseAddr(vals[k]); err == nil {
			reserved[k] = a
		}
	}
	for k, a := range reserved {
		if a == addr {
			return fmt.Errorf("proxy address %s is slirp's %s address", addr, k)
		}
	}
	dhcp := at(15)
	if a, err := netip.ParseAddr(vals["dhcpstart"]); err == nil {
		dhcp = a
	}
	if last := dhcpEnd(dhcp); addr.Compare(dhcp) >= 0 && addr.Compare(last) <= 0 {
		return fmt.Errorf("proxy address %s is in the DHCP pool %s-%s", addr, dhcp, last)
	}
	return nil
}

// dhcpEnd is the last of libslirp's 16 DHCP leases starting at first.
func dhcpEnd(first netip.Addr) netip.Addr {
	last := first
	for range 15 {
		last = last.Next()
	}
	return last
}

// splitQemuOpts splits a QemuOpts string at single commas; ",," is a comma
// inside a value.
func splitQemuOpts(s string) []string {
	var opts []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			cur.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == ',' {
			cur.WriteByte(',')
			i++
			continue
		}
		opts = append(opts, cur.String())
		cur.Reset()
	}
	return append(opts, cur.String())
}

func joinQemuOpts(opts []string) string {
	esc := make([]string, len(opts))
	for i, o := range opts {
		esc[i] = strings.ReplaceAll(o, ",", ",,")
	}
	return strings.Join(esc, ",")
}

// shellJoin quotes argv for g_shell_parse_argv, which libslirp uses to run
// a guestfwd command (no shell runs it; quoting only keeps words whole).
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, needsQuote) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func needsQuote(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("/._-+=:@%", r))
}
