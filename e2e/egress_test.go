//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// egressHosts are two HTTP servers on the host's loopback, reached from the
// guest only through slirp's host alias (192.168.5.2) or the egress proxy,
// which resolves allowed.test and denied.test to them (SBF_EGRESS_HOSTS): no
// other machine is ever addressed.
type egressHosts struct {
	allowed, denied int // ports
}

const bigBody = 8 << 20 // the download the proxy's cost is measured on

func startEgressHosts(t *testing.T) egressHosts {
	serve := func(name string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "%s-ok\n", name) })
		mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(bigBody))
			w.Write(make([]byte, bigBody))
		})
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return ln.Addr().(*net.TCPAddr).Port
	}
	return egressHosts{allowed: serve("allowed"), denied: serve("denied")}
}

// hostsEnv maps the test's names for the proxy (the operator's setting).
func (h egressHosts) hostsEnv() []string {
	return []string{"SBF_EGRESS_HOSTS=allowed.test=127.0.0.1,denied.test=127.0.0.1"}
}

// networkSpec locks the sandbox down to allowed.test on its port (and the
// address it resolves to on that port: a name never unlocks loopback alone).
func (h egressHosts) networkSpec() string {
	return fmt.Sprintf("\n[network]\negress = \"allowlist\"\nallow = [\"allowed.test:%d\", \"127.0.0.1:%d\"]\n",
		h.allowed, h.allowed)
}

// guestHTTP is a bash one-liner in the guest: an HTTP/1.0 GET of url sent
// to addr:port, printing the answer (no curl in the image needed).
func guestHTTP(addr string, port int, url string) string {
	return fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf 'GET %s HTTP/1.0\r\n\r\n' >&3 && cat <&3`, addr, port, url)
}

// guestReaches says whether a direct TCP connection from the guest opens.
func guestReaches(w *ws, addr string, port int) bool {
	r := w.sbf("", nil, "exec", "api", "--", "timeout", "15", "bash", "-c",
		fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, port))
	return r.code == 0
}

// download times an 8 MiB GET from the guest, the median of three, and
// returns how long the guest's side took (the exec's own cost excluded).
func download(t *testing.T, w *ws, addr string, port int, url string) time.Duration {
	script := `s=$(date +%s%N); n=$(` + guestHTTP(addr, port, url) + ` | wc -c); e=$(date +%s%N); echo "$n $((e-s))"`
	var took []time.Duration
	for range 3 {
		r := w.sbf("", nil, "exec", "api", "--", "bash", "-c", script)
		var n, ns int64
		if _, err := fmt.Sscan(r.stdout, &n, &ns); err != nil || n < bigBody {
			t.Errorf("download of %s via %s:%d: %q (exit %d, %s)", url, addr, port, r.stdout, r.code, r.stderr)
			return 0
		}
		took = append(took, time.Duration(ns))
	}
	return median(took)
}

// directDownloads is the download straight through slirp with the guest's
// two vCPUs, then with one of them offline: the proxied download runs after
// the restart to one vCPU, and under emulation a guest's network and its
// shell pipeline run in parallel on two, so only the second compares.
func directDownloads(t *testing.T, w *ws, h egressHosts) (twoCPUs, oneCPU time.Duration) {
	twoCPUs = download(t, w, "192.168.5.2", h.allowed, "/big")
	cpu1 := "/sys/devices/system/cpu/cpu1/online"
	if r := w.sbf("", nil, "exec", "api", "--", "sh", "-c", "echo 0 | sudo -n tee "+cpu1); r.code != 0 {
		t.Logf("taking the guest's second vCPU offline: exit %d %s", r.code, r.stderr)
		return twoCPUs, 0
	}
	defer w.sbf("", nil, "exec", "api", "--", "sh", "-c", "echo 1 | sudo -n tee "+cpu1)
	return twoCPUs, download(t, w, "192.168.5.2", h.allowed, "/big")
}

// testEgressControl runs while the guest has the network Lima gives it: it
// reaches the host's loopback through slirp's alias on the one port the
// operator's [policy] guest_host_ports names (operatorPolicy; the host
// guard refuses every other), which is what the policy must take away (so
// the later refusals mean something).
func testEgressControl(t *testing.T, w *ws, h egressHosts) (twoCPUs, oneCPU time.Duration) {
	if !guestReaches(w, "192.168.5.2", h.allowed) {
		t.Fatal("control: the unrestricted guest cannot reach the host's allowed port through 192.168.5.2; " +
			"the egress checks would prove nothing")
	}
	return directDownloads(t, w, h)
}

// testEgressEnforced runs once the VM restarted with the allowlist.
func testEgressEnforced(t *testing.T, w *ws, h egressHosts, direct [2]time.Duration) {
	proxy := "192.168.5.4"
	if r := w.sbf("", nil, "exec", "api", "--", "sh", "-c", "echo $http_proxy"); strings.TrimSpace(r.stdout) !=
		"http://192.168.5.4:3128" {
		t.Errorf("the guest's http_proxy = %q, want the egress proxy", r.stdout)
	}
	allowed := w.sbf("", nil, "exec", "api", "--", "bash", "-c",
		guestHTTP(proxy, 3128, fmt.Sprintf("http://allowed.test:%d/", h.allowed)))
	if !strings.Contains(allowed.stdout, "allowed-ok") {
		t.Errorf("allowed name through the proxy: exit %d %q %s", allowed.code, allowed.stdout, allowed.stderr)
	}
	denied := w.sbf("", nil, "exec", "api", "--", "bash", "-c",
		guestHTTP(proxy, 3128, fmt.Sprintf("http://denied.test:%d/", h.denied)))
	if !strings.Contains(denied.stdout, " 403 ") || strings.Contains(denied.stdout, "denied-ok") {
		t.Errorf("denied name through the proxy: %q, want the proxy's 403", denied.stdout)
	}
	for _, c := range []struct {
		what string
		addr string
		port int
	}{{"the host through slirp's alias", "192.168.5.2", h.allowed}, {"slirp's DNS", "192.168.5.3", 53}} {
		if guestReaches(w, c.addr, c.port) {
			t.Errorf("the restricted guest reached %s (%s:%d)", c.what, c.addr, c.port)
		}
	}
	// Root in the guest changes nothing: the rule is not the guest's.
	w.sbf("", nil, "exec", "api", "--", "sh", "-c",
		"sudo -n iptables -P OUTPUT ACCEPT; sudo -n iptables -F; sudo -n nft flush ruleset; true")
	if guestReaches(w, "192.168.5.2", h.allowed) {
		t.Error("after flushing the guest's firewall, the guest reached the host directly")
	}
	viaProxy := download(t, w, proxy, 3128, fmt.Sprintf("http://allowed.test:%d/big", h.allowed))
	if direct[1] > 0 && viaProxy > 0 {
		mbps := func(d time.Duration) float64 { return float64(bigBody) / d.Seconds() / (1 << 20) }
		fmt.Printf("\negress proxy cost (8 MiB from the host, in the guest, TCG, median of 3):\n"+
			"  direct, 2 vCPUs (slirp, before the policy)  %8.0f ms  %6.1f MiB/s\n"+
			"  direct, 1 vCPU online                       %8.0f ms  %6.1f MiB/s\n"+
			"  through the egress proxy, 1 vCPU            %8.0f ms  %6.1f MiB/s  (%.2fx direct)\n",
			direct[0].Seconds()*1000, mbps(direct[0]), direct[1].Seconds()*1000, mbps(direct[1]),
			viaProxy.Seconds()*1000, mbps(viaProxy), viaProxy.Seconds()/direct[1].Seconds())
		timings = append(timings, timing{"egress: 8 MiB direct, 1 vCPU (median of 3)", direct[1]},
			timing{"egress: 8 MiB through the proxy, 1 vCPU (median of 3)", viaProxy})
	}
	var log struct {
		Entries []struct{ Decision, Host string } `json:"entries"`
	}
	json.Unmarshal([]byte(w.must("sbf egress log api --json", "egress", "log", "api", "--json").stdout), &log)
	seen := map[string]bool{}
	for _, e := range log.Entries {
		seen[e.Decision+" "+e.Host] = true
	}
	if !seen["allowed allowed.test"] || !seen["denied denied.test"] {
		t.Errorf("egress log = %+v, want allowed.test allowed and denied.test denied", log.Entries)
	}
}
