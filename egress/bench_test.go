package egress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// The benchmarks compare a download over loopback straight from the server
// with the same download through the proxy: plain HTTP (a new upstream
// connection per request, as the proxy keeps none) and HTTPS through a
// CONNECT tunnel (kept open across requests, as clients do).
//
//	go test -run '^$' -bench . -benchtime 20x ./egress/

const benchBody = 8 << 20

func benchServers(b *testing.B, size int) (plain, secure *httptest.Server) {
	body := bytes.Repeat([]byte("x"), size)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size)) // as file servers, registries and mirrors do
		w.Write(body)
	})
	plain, secure = httptest.NewServer(h), httptest.NewTLSServer(h)
	b.Cleanup(plain.Close)
	b.Cleanup(secure.Close)
	return plain, secure
}

// benchProxy runs a proxy allowing bench.example, routed to the servers.
func benchProxy(b *testing.B, plain, secure *httptest.Server) string {
	tp := startProxy(b, mustPolicy(b, "allowlist", "bench.example"), StaticResolver{"bench.example": {otherIP}}, nil)
	tp.dialer.route(otherIP+":80", plain.Listener.Addr().String())
	tp.dialer.route(otherIP+":443", secure.Listener.Addr().String())
	return tp.addr
}

func benchGet(b *testing.B, c *http.Client, u string, size int) {
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(size) {
			b.Fatalf("read %d bytes, want %d", n, size)
		}
	}
}

func client(proxyAddr string, insecure bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure}}
	if proxyAddr != "" {
		tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr})
	}
	return &http.Client{Transport: tr}
}

func BenchmarkDownloadDirect(b *testing.B) {
	plain, _ := benchServers(b, benchBody)
	benchGet(b, client("", false), plain.URL, benchBody)
}

func BenchmarkDownloadViaProxy(b *testing.B) {
	plain, secure := benchServers(b, benchBody)
	benchGet(b, client(benchProxy(b, plain, secure), false), "http://bench.example/", benchBody)
}

func BenchmarkDownloadTLSDirect(b *testing.B) {
	_, secure := benchServers(b, benchBody)
	benchGet(b, client("", true), secure.URL, benchBody)
}

func BenchmarkDownloadTLSViaConnect(b *testing.B) {
	plain, secure := benchServers(b, benchBody)
	benchGet(b, client(benchProxy(b, plain, secure), true), "https://bench.example/", benchBody)
}

func BenchmarkSmallRequestDirect(b *testing.B) {
	plain, _ := benchServers(b, 100)
	benchGet(b, client("", false), plain.URL, 100)
}

func BenchmarkSmallRequestViaProxy(b *testing.B) {
	plain, secure := benchServers(b, 100)
	benchGet(b, client(benchProxy(b, plain, secure), false), "http://bench.example/", 100)
}

func BenchmarkSmallRequestTLSDirect(b *testing.B) {
	_, secure := benchServers(b, 100)
	benchGet(b, client("", true), secure.URL, 100)
}

func BenchmarkSmallRequestTLSViaConnect(b *testing.B) {
	plain, secure := benchServers(b, 100)
	benchGet(b, client(benchProxy(b, plain, secure), true), "https://bench.example/", 100)
}

// The guest's path in a VM with an allowlist, against a direct download
// of the same 8.4 MiB file (the size measured in a VM), each on a new
// connection as the e2e's downloads were. QEMU starts a relay process for
// each guest connection (stdin and stdout a loopback TCP socket, as
// libslirp's guestfwd gives it); the relay hands the connection to the
// proxy's unix socket and exits (ViaRelay), or, as sbf did before, copies
// it to and from a unix connection to the proxy for as long as it lasts
// (ViaCopyingRelay: still what a relay does when the proxy listens on TCP).
// The proxy fetches from the server.
//
//	go test -run '^$' -bench 'Direct84|Relay' -count 10 ./egress/
const relayBody = 8808038

func BenchmarkDownloadDirect84(b *testing.B) {
	plain, _ := benchServers(b, relayBody)
	benchGet(b, freshClient(""), plain.URL, relayBody)
}

func BenchmarkDownloadViaRelay(b *testing.B) {
	plain, secure := benchServers(b, relayBody)
	benchGet(b, freshClient(benchRelay(b, plain, secure, "")), "http://bench.example/", relayBody)
}

func BenchmarkDownloadViaCopyingRelay(b *testing.B) {
	plain, secure := benchServers(b, relayBody)
	benchGet(b, freshClient(benchRelay(b, plain, secure, "copy")), "http://bench.example/", relayBody)
}

func freshClient(proxyAddr string) *http.Client {
	c := client(proxyAddr, false)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	return c
}

// benchRelay runs the proxy on a unix socket and, in front of it, a
// loopback listener that starts a relay process for every connection, as
// QEMU does; it returns the listener's address, where clients find "the
// proxy". mode "copy" makes the relays copy instead of handing over.
func benchRelay(b *testing.B, plain, secure *httptest.Server, mode string) string {
	sock := filepath.Join(b.TempDir(), "proxy.sock")
	tp := startProxyOn(b, "unix", sock, mustPolicy(b, "allowlist", "bench.example"),
		StaticResolver{"bench.example": {otherIP}})
	tp.dialer.route(otherIP+":80", plain.Listener.Addr().String())
	tp.dialer.route(otherIP+":443", secure.Listener.Addr().String())
	guest, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { guest.Close() })
	go func() {
		for {
			c, err := guest.Accept()
			if err != nil {
				return
			}
			go runRelay(c, "unix:"+sock, mode)
		}
	}()
	return guest.Addr().String()
}

// runRelay runs this test binary as the relay of c (TestMain).
func runRelay(c net.Conn, addr, mode string) {
	defer c.Close()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), relayHelperAddr+"="+addr, relayHelperMode+"="+mode)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, f
	err = cmd.Start()
	f.Close()
	c.Close()
	if err == nil {
		cmd.Wait()
	}
}
