package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSlowlorisIsCutAtTheHeaderTimeout(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{},
		func(c *Config) { c.HeaderTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://pypi.org/ HTTP/1.1\r\n")
	// Keep sending header lines, never the blank line, far longer than the
	// timeout; the proxy must answer and close before the loop runs out.
	answered := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(c)
		answered <- string(b)
	}()
	for i := 0; i < 500; i++ {
		select {
		case got := <-answered:
			if !strings.HasPrefix(got, "HTTP/1.1 408") {
				t.Errorf("answer %q, want 408", got)
			}
			if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || !strings.Contains(e.Reason, "in time") {
				t.Errorf("log entry %+v", e)
			}
			return
		default:
		}
		fmt.Fprintf(c, "X-Drip-%d: 1\r\n", i)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the proxy kept reading a request head that never ends")
}

func TestOversizedRequestHeadIs431(t *testing.T) {
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{},
		func(c *Config) { c.MaxHeaderBytes = 1024 })
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go fmt.Fprintf(c, "GET http://pypi.org/ HTTP/1.1\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 64<<10))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("got %v %v, want 431", resp, err)
	}
}

func TestConnectionsOverTheCapAre503(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "10.1.1.1:7"), StaticResolver{},
		func(c *Config) { c.MaxConns = 2 })
	tp.dialer.route("10.1.1.1:7", upAddr)
	for i := 0; i < 2; i++ { // two tunnels held open take both slots
		if resp, _ := connect(t, tp.addr, "10.1.1.1:7"); resp.StatusCode != 200 {
			t.Fatalf("tunnel %d answered %d", i, resp.StatusCode)
		}
	}
	resp, _ := connect(t, tp.addr, "10.1.1.1:7")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third connection answered %d, want 503", resp.StatusCode)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || !strings.Contains(e.Reason, "over 2 connections") {
		t.Errorf("log entry %+v", e)
	}
}

func TestIdleTunnelIsClosedOnTheInjectedClock(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "10.1.1.1:7"), StaticResolver{},
		func(c *Config) { c.IdleTimeout = time.Minute })
	tp.dialer.route("10.1.1.1:7", upAddr)
	_, tun := connect(t, tp.addr, "10.1.1.1:7")
	io.WriteString(tun, "x")
	io.ReadFull(tun, make([]byte, 1))
	for i := 0; tp.clk.Waiters() == 0; i++ { // the watchdog is asleep on the fake clock
		if i == 2000 { // 10 s: a loaded machine is slow to start the watchdog
			t.Fatal("no idle watchdog is waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tp.clk.Advance(59 * time.Second)
	io.WriteString(tun, "y") // still open before the minute is up
	if _, err := io.ReadFull(tun, make([]byte, 1)); err != nil {
		t.Fatalf("the tunnel closed early: %v", err)
	}
	tp.clk.Advance(2 * time.Minute)
	if _, err := readAllUntilClosed(tun); err != nil {
		t.Fatalf("reading the idle tunnel: %v", err)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Allowed || e.BytesUp != 2 || e.BytesDown != 2 {
		t.Errorf("log entry %+v", e)
	}
}

func TestHugeClientHelloIsRefusedWithoutBufferingIt(t *testing.T) {
	upAddr := serveTCP(t, echo)
	tp := startProxy(t, mustPolicy(t, "allowlist", "pypi.org"), StaticResolver{"pypi.org": {pypiIP}}, nil)
	tp.dialer.route(pypiIP+":443", upAddr)
	_, tun := connect(t, tp.addr, "pypi.org:443")
	// A handshake record announcing a 16 MiB ClientHello.
	tun.Write([]byte{0x16, 3, 1, 0, 4, handshakeClientHello, 0xff, 0xff, 0xff})
	if got, _ := readAllUntilClosed(tun); len(got) > len(tlsAlertUnrecognizedName) {
		t.Errorf("got %q back", got)
	}
	if e := tp.waitLog(t, 1)[0]; e.Decision != Denied || !strings.Contains(e.Reason, "over the") {
		t.Errorf("log entry %+v", e)
	}
}

func TestServeStopsAndClosesOpenTunnels(t *testing.T) {
	upAddr := serveTCP(t, echo)
	pol := mustPolicy(t, "allowlist", "10.1.1.1:7")
	d := newRouteDialer()
	d.route("10.1.1.1:7", upAddr)
	p, err := New(Config{Policy: pol, Dialer: d, Resolver: StaticResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	_, tun := connect(t, ln.Addr().String(), "10.1.1.1:7")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := readAllUntilClosed(tun); err != nil {
		t.Fatalf("the open tunnel: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after Serve returned")
	}
}

// TestStalledClientDoesNotMakeTheProxyBuffer: an upstream sending 64 MiB to
// a client that stops reading is held back by TCP, not by proxy memory.
func TestStalledClientDoesNotMakeTheProxyBuffer(t *testing.T) {
	const total = 64 << 20
	chunk := make([]byte, 1<<20)
	upAddr := serveTCP(t, func(c net.Conn) {
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	tp := startProxy(t, mustPolicy(t, "allowlist", "10.1.1.1:9"), StaticResolver{}, nil)
	tp.dialer.route("10.1.1.1:9", upAddr)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	_, tun := connect(t, tp.addr, "10.1.1.1:9")
	if _, err := io.ReadFull(tun, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	// Stalled: let the upstream fill every buffer it can, then look.
	var during uint64
	for range 20 {
		time.Sleep(20 * time.Millisecond)
		during = max(during, heap())
	}
	if grown := int64(during) - int64(before); grown > 16<<20 {
		t.Errorf("the heap grew by %d MiB while the client stalled", grown>>20)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(tun, total-(1<<20)))
	if err != nil || n != total-(1<<20) {
		t.Fatalf("read the rest: %d %v", n, err)
	}
}
