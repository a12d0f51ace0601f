package hostguard

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"strings"
)

// ResolvConf is where libslirp reads the resolvers its DNS alias forwards to.
const ResolvConf = "/etc/resolv.conf"

// readNameservers lists the nameserver addresses of a resolv.conf; a file
// that cannot be read lists none (slirp then has no DNS either).
func readNameservers(path string) []netip.Addr {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(f[1]); err == nil {
			out = append(out, a.Unmap().WithZone(""))
		}
	}
	return out
}
