package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// Public-looking addresses the tests resolve names to; routeDialer sends
// them to loopback servers, and refuses any address it has no route for, so
// no test traffic leaves the machine.
const (
	pypiIP  = "151.101.0.223"
	otherIP = "93.184.216.34"
)

var testEpoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// routeDialer maps "ip:port" to a loopback listener's address.
type routeDialer struct {
	mu     sync.Mutex
	routes map[string]string
	dialed []string
}

func newRouteDialer() *routeDialer { return &routeDialer{routes: map[string]string{}} }

func (d *routeDialer) route(from, to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.routes[from] = to
}

func (d *routeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	to, ok := d.routes[addr]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("test dialer: no route to %s", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *routeDialer) dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// countingResolver records the names it was asked for.
type countingResolver struct {
	StaticResolver
	mu    sync.Mutex
	asked []string
}

func (r *countingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	return r.StaticResolver.LookupIPAddr(ctx, host)
}

func (r *countingResolver) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

type testProxy struct {
	addr    string
	logPath string
	dialer  *routeDialer
	res     *countingResolver
	clk     *clock.Fake
}

// startProxy runs a proxy on loopback with a static resolver and a route
// dialer; adjust tweaks the config before New.
func startProxy(t testing.TB, pol Policy, names StaticResolver, adjust func(*Config)) *testProxy {
	t.Helper()
	return startProxyAdjusted(t, "tcp", "127.0.0.1:0", pol, names, adjust)
}

// startProxyOn runs the proxy on a listener of the given network (unix: a
// socket path), as a VM's proxy process does.
func startProxyOn(t testing.TB, network, addr string, pol Policy, names StaticResolver) *testProxy {
	t.Helper()
	return startProxyAdjusted(t, network, addr, pol, names, nil)
}

func startProxyAdjusted(t testing.TB, network, addr string, pol Policy, names StaticResolver,
	adjust func(*Config)) *testProxy {
	t.Helper()
	tp := &testProxy{
		logPath: filepath.Join(t.TempDir(), "egress.log"),
		dialer:  newRouteDialer(),
		res:     &countingResolver{StaticResolver: names},
		clk:     clock.NewFake(testEpoch),
	}
	lg, err := OpenLog(tp.logPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Sandbox: "api", Policy: pol, Resolver: tp.res, Dialer: tp.dialer, Log: lg,
		Clock: tp.clk, HostAddrs: []netip.Addr{}}
	if adjust != nil {
		adjust(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	tp.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		lg.Close()
	})
	return tp
}

// waitLog waits (bounded) until the log has n entries and returns them.
func (tp *testProxy) waitLog(t testing.TB, n int) []Entry {
	t.Helper()
	var got []Entry
	for range 500 {
		var err error
		if got, err = ReadLog(tp.logPath, 0); err != nil {
			t.Fatal(err)
		}
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("log has %d entries, want %d: %+v", len(got), n, got)
	return nil
}

// bufConn reads through the bufio.Reader that read the CONNECT answer.
type bufConn struct {
	net.Conn
	br *bufio.Reader
}

func (c bufConn) Read(b []byte) (int, error) { return c.br.Read(b) }

// connect opens a tunnel through the proxy and returns the proxy's answer
// and, when it is 200, the tunnel.
func connect(t *testing.T, proxyAddr, target string) (*http.Response, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading the CONNECT answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return resp, nil
	}
	return resp, bufConn{Conn: c, br: br}
}

// serveTCP runs handle on every connection of a loopback listener.
func serveTCP(t *testing.T, handle func(net.Conn)) string {
	return testutil.ServeTCP(t, handle).String()
}

var echo = testutil.Echo

// readAllUntilClosed reads until the peer closes or the read fails.
func readAllUntilClosed(c net.Conn) ([]byte, error) {
	b, err := io.ReadAll(c)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return b, err
}
