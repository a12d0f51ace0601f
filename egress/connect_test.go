package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// tlsUpstream is an HTTPS server answering "hello over TLS".
func tlsUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello over TLS")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConnectAllowedNameWithMatchingSNI(t *testing.T) {
	up := tlsUpstream(t)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":443", up.Listener.Addr().String())
	// Go's transport sends CONNECT itself and then a ClientHello naming pypi.org.
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr}),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test certificate is not for pypi.org
	}
	resp, err := (&http.Client{Transport: tr}).Get("https://pypi.org/simple/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if string(body) != "hello over TLS" {
		t.Fatalf("got %q", body)
	}
	e := tp.waitLog(t, 1)[0]
	if e.Decision != Allowed || e.Method != "CONNECT" || e.Host != "pypi.org" || e.Port != 443 ||
		e.Addr != pypiIP || e.BytesUp == 0 || e.BytesDown == 0 {
		t.Errorf("log entry %+v", e)
	}
}

func TestConnectRefusesSNIMismatchWithARealTLSClient(t *testing.T) {
	up := tlsUpstream(t)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":443", up.Listener.Addr().String())
	resp, tun := connect(t, tp.addr, "pypi.org:443")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT answered %d", resp.StatusCode)
	}
	// Domain fronting: the tunnel goes to pypi.org's address, the hello asks for another site.
	tc := tls.Client(tun, &tls.Config{ServerName: "evil.example", InsecureSkipVerify: true})
	err := tc.Handshake()
	if err == nil || !strings.Contains(err.Error(), "unrecognized name") {
		t.Fatalf("handshake error %v, want the proxy's unrecognized_name alert", err)
	}
	e := tp.waitLog(t, 1)[0]
	if e.Decision != Denied || !strings.Contains(e.Reason, `"evil.example" does not match CONNECT host pypi.org`) {
		t.Errorf("log entry %+v", e)
	}
}

func TestConnectRefusesHelloWithoutSNIToAName(t *testing.T) {
	up := tlsUpstream(t)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":443", up.Listener.Addr().String())
	_, tun := connect(t, tp.addr, "pypi.org:443")
	// An IP as ServerName makes crypto/tls send no SNI.
	tc := tls.Client(tun, &tls.Config{ServerName: "127.0.0.1", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a hello without SNI went through to a name")
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || !strings.Contains(e.Reason, "names no server") {
		t.Errorf("log entry %+v", e)
	}
}

func TestConnectToPort443RefusesNonTLS(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":443", upAddr)
	_, tun := connect(t, tp.addr, "pypi.org:443")
	io.WriteString(tun, "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n")
	if got, _ := readAllUntilClosed(tun); len(got) != 0 {
		t.Errorf("plain bytes on port 443 were carried: the echo answered %q", got)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || !strings.Contains(e.Reason, "only TLS") {
		t.Errorf("log entry %+v", e)
	}
}

func TestConnectToDeniedPortIs403(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	resp, tun := connect(t, tp.addr, "pypi.org:22")
	if resp.StatusCode != http.StatusForbidden || tun != nil {
		t.Fatalf("CONNECT to a port no rule lists answered %d", resp.StatusCode)
	}
	if len(tp.dialer.dials()) != 0 || len(tp.res.names()) != 0 {
		t.Error("a denied CONNECT was resolved or dialled")
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || e.Port != 22 || e.Host != "pypi.org" {
		t.Errorf("log entry %+v", e)
	}
}

func TestConnectIPLiteralAllowedByCIDRCarriesAnyProtocol(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "10.20.0.0/16:5432"), StaticResolver{}, nil)
	tp.dialer.route("10.20.3.4:5432", upAddr)
	resp, tun := connect(t, tp.addr, "10.20.3.4:5432")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT to an address in a listed range answered %d", resp.StatusCode)
	}
	io.WriteString(tun, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(tun, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	if resp, _ := connect(t, tp.addr, "10.21.0.1:5432"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an address outside the range answered %d", resp.StatusCode)
	}
	if resp, _ := connect(t, tp.addr, "10.20.3.4:443"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a port the range rule does not list answered %d", resp.StatusCode)
	}
}

func TestConnectServerSpeaksFirst(t *testing.T) {
	upAddr := serveTCP(t, func(c net.Conn) {
		io.WriteString(c, "220 ready\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "got "+line)
	})
	tp := startProxy(t, mustPolicy(t, "allowlist", "mail.example.com:25"),
		StaticResolver{"mail.example.com": {otherIP}}, nil)
	tp.dialer.route(otherIP+":25", upAddr)
	_, tun := connect(t, tp.addr, "mail.example.com:25")
	br := bufio.NewReader(tun)
	if greet, err := br.ReadString('\n'); err != nil || greet != "220 ready\r\n" {
		t.Fatalf("greeting %q %v: a server-first protocol must not wait for the client", greet, err)
	}
	io.WriteString(tun, "EHLO x\n")
	if got, _ := br.ReadString('\n'); got != "got EHLO x\n" {
		t.Errorf("got %q", got)
	}
}

func TestDNSRebindingToLoopbackIsDeniedUnlessAnAddressRuleListsIt(t *testing.T) {
	upAddr := serveTCP(t, echo)
	_, port, _ := net.SplitHostPort(upAddr)
	names := StaticResolver{"rebind.example.com": {"127.0.0.1"}}

	tp := startProxy(t, mustPolicy(t, "allowlist", "rebind.example.com:"+port), names, nil)
	tp.dialer.route(upAddr, upAddr)
	resp, _ := connect(t, tp.addr, "rebind.example.com:"+port)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a name resolving to 127.0.0.1 answered %d", resp.StatusCode)
	}
	if e := tp.waitLog(t, 1)[0]; !strings.Contains(e.Reason, "loopback address 127.0.0.1") || e.Addr != "127.0.0.1" {
		t.Errorf("log entry %+v", e)
	}
	if len(tp.dialer.dials()) != 0 {
		t.Error("the proxy dialled a refused address")
	}

	tp2 := startProxy(t, mustPolicy(t, "allowlist", "rebind.example.com:"+port, "127.0.0.1/32:"+port), names, nil)
	tp2.dialer.route(upAddr, upAddr)
	if resp, _ := connect(t, tp2.addr, "rebind.example.com:"+port); resp.StatusCode != 200 {
		t.Errorf("with 127.0.0.1 listed by an address rule the CONNECT answered %d", resp.StatusCode)
	}
}

func TestMixedAnswerDialsOnlyThePublicAddress(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org:8000"),
		StaticResolver{"pypi.org": {"127.0.0.1", "10.0.0.1", pypiIP}}, nil)
	tp.dialer.route(pypiIP+":8000", upAddr)
	if resp, _ := connect(t, tp.addr, "pypi.org:8000"); resp.StatusCode != 200 {
		t.Fatalf("answered %d", resp.StatusCode)
	}
	if d := tp.dialer.dials(); !slices.Equal(d, []string{pypiIP + ":8000"}) {
		t.Errorf("dialled %v, want only the public address", d)
	}
}

func TestDenyModeRefusesEverything(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "deny"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	if resp, _ := connect(t, tp.addr, "pypi.org:443"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("deny mode answered %d", resp.StatusCode)
	}
	if e := tp.waitLog(t, 1)[0]; e.Reason != "egress is deny" {
		t.Errorf("log entry %+v", e)
	}
}

func TestUnreachableAllowedHostIs502AndLoggedAsAFailure(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	resp, _ := connect(t, tp.addr, "pypi.org:443") // the route dialer has no route
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("answered %d", resp.StatusCode)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Failed || !strings.Contains(e.Reason, "connecting") {
		t.Errorf("log entry %+v", e)
	}
}

// Issue 39: a CONNECT to an allowed name that did not resolve was logged
// "allowed", as if the guest had reached it.
func TestUnresolvedAllowedNameIsLoggedAsAFailure(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{}, nil)
	resp, _ := connect(t, tp.addr, "pypi.org:443")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("answered %d", resp.StatusCode)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Failed || !strings.Contains(e.Reason, "resolving") || e.BytesUp != 0 {
		t.Errorf("log entry %+v", e)
	}
}
