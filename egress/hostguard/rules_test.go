package hostguard

import (
	"encoding/binary"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func TestJudgeRefusesTheHostUnlessTheOperatorNamedThePort(t *testing.T) {
	host := Host{Addrs: []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.1.255.255"),
		netip.MustParseAddr("fe80::1")}}
	rules := Rules{Ports: []int{8080}, Nameservers: []netip.Addr{netip.MustParseAddr("127.0.0.53")},
		Endpoints: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:41000")}}
	for _, c := range []struct {
		to  string
		ok  bool
		why string
	}{
		{"127.0.0.1:8765", false, "loopback"},
		{"127.9.9.9:22", false, "loopback"},
		{"[::1]:8765", false, "loopback"},
		{"[::ffff:127.0.0.1]:8765", false, "loopback"},
		{"0.0.0.0:8765", false, "unspecified"},
		{"0.1.2.3:80", false, "unspecified"},
		{"[::]:8765", false, "unspecified"},
		{"255.255.255.255:67", false, "broadcast"},
		{"10.1.255.255:137", false, "this host"},
		{"224.0.0.251:5353", false, "multicast"},
		{"10.1.2.3:5432", false, "this host"},
		{"[fe80::1%eth0]:22", false, "this host"},
		{"127.0.0.1:8080", true, ""},           // the operator's port
		{"10.1.2.3:8080", true, ""},            // on any host address
		{"127.0.0.53:53", true, ""},            // the resolver slirp forwards DNS to
		{"127.0.0.53:5353", false, "loopback"}, // but only DNS
		{"127.0.0.1:53", false, "loopback"},    // and only that resolver
		{"127.0.0.1:41000", true, ""},          // the proxy's own address
		{"93.184.216.34:443", true, ""},        // the world is the egress mode's business
		{"10.1.2.4:22", true, ""},              // another machine of the host's network
	} {
		ok, why := rules.Judge(netip.MustParseAddrPort(c.to), host)
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("Judge(%s) = %v %q, want %v %q", c.to, ok, why, c.ok, c.why)
		}
	}
}

func TestParseSockaddr(t *testing.T) {
	v4 := make([]byte, 16)
	binary.NativeEndian.PutUint16(v4, afInet)
	binary.BigEndian.PutUint16(v4[2:], 8765)
	copy(v4[4:], []byte{127, 0, 0, 1})
	v6 := make([]byte, 28)
	binary.NativeEndian.PutUint16(v6, afInet6)
	binary.BigEndian.PutUint16(v6[2:], 22)
	v6[23] = 1
	unix := make([]byte, 110)
	binary.NativeEndian.PutUint16(unix, afUnix)
	vsock := make([]byte, 16)
	binary.NativeEndian.PutUint16(vsock, 40)
	rules := Rules{}
	for _, c := range []struct {
		name  string
		b     []byte
		parse bool
		ok    bool
	}{
		{"inet", v4, true, false},
		{"inet6", v6, true, false},
		{"unix", unix, true, true},
		{"vsock", vsock, true, false},
		{"short inet", v4[:6], false, false},
		{"short inet6", v6[:20], false, false},
		{"nothing", nil, false, false},
	} {
		tgt, parsed := parseSockaddr(c.b)
		if parsed != c.parse {
			t.Errorf("%s: parsed = %v", c.name, parsed)
			continue
		}
		if !parsed {
			continue
		}
		if ok, _ := rules.judgeTarget(tgt, Host{}); ok != c.ok {
			t.Errorf("%s (%v): allowed = %v, want %v", c.name, tgt.addr, ok, c.ok)
		}
	}
	if tgt, _ := parseSockaddr(v4); tgt.addr.String() != "127.0.0.1:8765" {
		t.Errorf("inet address = %v", tgt.addr)
	}
	if tgt, _ := parseSockaddr(v6); tgt.addr.String() != "[::1]:22" {
		t.Errorf("inet6 address = %v", tgt.addr)
	}
}

func TestReadNameservers(t *testing.T) {
	path := t.TempDir() + "/resolv.conf"
	writeFile(t, path, "# comment\nnameserver 127.0.0.53\nsearch example\nnameserver ::1\nnameserver bad\n")
	got := readNameservers(path)
	if len(got) != 2 || got[0].String() != "127.0.0.53" || got[1].String() != "::1" {
		t.Errorf("nameservers = %v", got)
	}
	if got := readNameservers(path + ".missing"); got != nil {
		t.Errorf("a missing file lists %v", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
