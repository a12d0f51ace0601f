package egress

import (
	"flag"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/sandboxforge/sbf/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestRestrictNetdevGolden rewrites the QEMU command lines Lima v1.2.1
// really builds (testdata/qemuargs: argv, optional relay, want).
func TestRestrictNetdevGolden(t *testing.T) {
	testutil.RunGolden(t, "testdata/qemuargs/*.txtar", *update, func(t *testing.T, ar *txtar.Archive) string {
		var r Restriction
		if relay := testutil.File(ar, "relay"); relay != "" {
			r.Relay = lines(relay)
		}
		argv := lines(testutil.File(ar, "argv"))
		got, err := RestrictNetdev(argv, r)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		if again, err := RestrictNetdev(got, r); err != nil || !slices.Equal(again, got) {
			t.Errorf("rewriting the output again changed it (%v)", err)
		}
		for i := range argv {
			if argv[i] != got[i] && !strings.HasPrefix(argv[i], "user,") {
				t.Errorf("argument %d %q changed to %q", i, argv[i], got[i])
			}
		}
		return strings.Join(got, "\n") + "\n"
	})
}

func TestRestrictNetdevRefusals(t *testing.T) {
	user := "user,id=net0,net=192.168.5.0/24,dhcpstart=192.168.5.15,hostfwd=tcp:127.0.0.1:40123-:22"
	relay := Restriction{Relay: []string{"/bin/sbf", "egress-relay", "/run/p.sock"}}
	tests := []struct {
		name string
		argv []string
		r    Restriction
		want string
	}{
		{"no netdev", []string{"-m", "2048"}, relay, "no -netdev user"},
		{"two user netdevs", []string{"-netdev", user, "-netdev", "user,id=net1"}, relay, "more than one"},
		{"tap", []string{"-netdev", user, "-netdev", "tap,id=net1,ifname=tap0"}, relay, "cannot restrict"},
		{"json netdev", []string{"-netdev", `{"type":"user","id":"net0"}`}, relay, "cannot restrict"},
		{"-nic", []string{"-netdev", user, "-nic", "user"}, relay, "only -netdev user"},
		{"-netdev=", []string{"-netdev=" + user}, relay, "two arguments"},
		{"dangling -netdev", []string{"-netdev"}, relay, "no value"},
		{"foreign guestfwd", []string{"-netdev", user + ",guestfwd=tcp:192.168.5.9:80-cmd:nc x 80"}, relay,
			"a way out the policy does not know"},
		{"foreign guestfwd, deny", []string{"-netdev", user + ",guestfwd=tcp:192.168.5.9:80-tcp:h:80"},
			Restriction{}, "a way out"},
		{"proxy on the gateway", []string{"-netdev", user}, Restriction{Relay: relay.Relay,
			GuestAddr: netip.MustParseAddrPort("192.168.5.2:3128")}, "slirp's host address"},
		{"proxy on the DNS", []string{"-netdev", user}, Restriction{Relay: relay.Relay,
			GuestAddr: netip.MustParseAddrPort("192.168.5.3:3128")}, "slirp's dns address"},
		{"proxy in the DHCP pool", []string{"-netdev", user}, Restriction{Relay: relay.Relay,
			GuestAddr: netip.MustParseAddrPort("192.168.5.20:3128")}, "DHCP pool 192.168.5.15-192.168.5.30"},
		{"proxy outside the network", []string{"-netdev", user}, Restriction{Relay: relay.Relay,
			GuestAddr: netip.MustParseAddrPort("10.0.2.4:3128")}, "not in the guest network 192.168.5.0/24"},
		{"empty relay", []string{"-netdev", user}, Restriction{Relay: []string{}}, "relay command is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RestrictNetdev(tt.argv, tt.r)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRestrictNetdevDefaultSlirpNetwork(t *testing.T) {
	// Without net=, slirp's network is 10.0.2.0/24: 192.168.5.4 is outside it.
	_, err := RestrictNetdev([]string{"-netdev", "user,id=n"}, Restriction{Relay: []string{"/bin/relay"}})
	if err == nil || !strings.Contains(err.Error(), "10.0.2.0/24") {
		t.Fatalf("error %v", err)
	}
	got, err := RestrictNetdev([]string{"-netdev", "user,id=n"}, Restriction{Relay: []string{"/bin/relay"},
		GuestAddr: netip.MustParseAddrPort("10.0.2.100:3128")})
	if err != nil || got[1] != "user,id=n,restrict=on,ipv6=off,guestfwd=tcp:10.0.2.100:3128-cmd:/bin/relay" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestQemuOptsRoundTrip(t *testing.T) {
	for _, s := range []string{"user,id=a", "user,x=a,,b,y=c", "user,,,z", "a"} {
		if got := joinQemuOpts(splitQemuOpts(s)); got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
	if got := splitQemuOpts("user,x=a,,b,y=c"); !slices.Equal(got, []string{"user", "x=a,b", "y=c"}) {
		t.Errorf("split %q", got)
	}
	if got := shellJoin([]string{"/a b/sbf", "it's", "", "plain-arg"}); got != `'/a b/sbf' 'it'\''s' '' plain-arg` {
		t.Errorf("shellJoin %s", got)
	}
}
