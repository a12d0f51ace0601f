package egress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
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
