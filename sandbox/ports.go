package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Codes of port forwarding's failures.
const (
	CodePortUnsupported = "PORT_FORWARD_UNSUPPORTED"
	CodePortInUse       = "HOST_PORT_IN_USE"
)

// guestDialTimeout bounds how long one forwarded connection waits for the
// guest to answer.
const guestDialTimeout = 30 * time.Second

// Forward listens on a host loopback port and carries each connection to
// a port on the guest's own loopback, through the driver (SSH for a VM).
// It never listens on anything but 127.0.0.1.
type Forward struct {
	Sandbox   string
	Instance  string
	GuestPort int
	HostPort  int

	ln   net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	// ctx is the starting call's, without its end: a forward outlives the
	// call that started it (an MCP tool call returns at once) and runs
	// until Close, so its dials keep the call's values but not its deadline.
	ctx    context.Context
	admit  func() error // nil: every connection; else refuses once the sandbox ended
	done   chan struct{}
	closed sync.Once
	mu     sync.Mutex
	conns  map[net.Conn]bool

	Connections atomic.Int64 // accepted so far
	Failures    atomic.Int64 // connections the guest side refused
	BytesIn     atomic.Int64 // host → guest
	BytesOut    atomic.Int64 // guest → host
}

// CheckPort validates a TCP port a caller gave (zero allowed when
// optional, meaning "choose one").
func CheckPort(field string, port int, optional bool) error {
	if (optional && port == 0) || (port >= 1 && port <= 65535) {
		return nil
	}
	return coded.New(coded.InvalidArguments, map[string]any{"field": field, "value": port},
		"%s must be a TCP port (1-65535), not %d", field, port)
}

// Forward starts forwarding 127.0.0.1:hostPort (a free port when 0) to
// guestPort in the target. admit, when set, is asked before each new
// connection and ends the forward when it fails (the sandbox's lease
// ran out). The forward runs until Close, whenever ctx ends.
func (t *Target) Forward(ctx context.Context, hostPort, guestPort int, admit func() error) (*Forward, error) {
	if err := CheckPort("port", guestPort, false); err != nil {
		return nil, err
	}
	if err := CheckPort("host_port", hostPort, true); err != nil {
		return nil, err
	}
	drv, err := t.Driver()
	if err != nil {
		return nil, err
	}
	caps := drivers.CapabilitiesOf(drv)
	pd := caps.DialGuest
	if pd == nil {
		return nil, coded.New(CodePortUnsupported, map[string]any{"driver": t.DriverName},
			"the %s driver of sandbox %s cannot forward ports", t.DriverName, t.Sandbox)
	}
	// A guest that shares this host's network (the sim) has its port on
	// this loopback: forwarding it to itself would loop.
	onHost := false
	if caps.HostShell {
		onHost = true
		if hostPort == guestPort {
			return nil, coded.New(coded.InvalidArguments, map[string]any{"field": "host_port"},
				"the %s driver's guest port %d is this host's port %d already; choose another host_port",
				t.DriverName, guestPort, guestPort)
		}
	}
	ln, err := listenLoopback(hostPort, guestPort, onHost)
	if err != nil {
		return nil, err
	}
	f := &Forward{Sandbox: t.Sandbox, Instance: t.Instance, GuestPort: guestPort,
		HostPort: ln.Addr().(*net.TCPAddr).Port, ln: ln, admit: admit, done: make(chan struct{}),
		conns: map[net.Conn]bool{}, ctx: context.WithoutCancel(ctx)}
	f.dial = func(ctx context.Context) (net.Conn, error) { return pd.DialGuest(ctx, t.Instance, guestPort) }
	go f.serve()
	return f, nil
}

// listenLoopback listens on 127.0.0.1:port, a free port when 0 (never
// the guest's own port when the guest shares this host's network).
func listenLoopback(port, guestPort int, avoidGuest bool) (net.Listener, error) {
	for range 5 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, coded.New(CodePortInUse, map[string]any{"host_port": port},
				"listening on 127.0.0.1:%d: %v", port, err)
		}
		if !avoidGuest || ln.Addr().(*net.TCPAddr).Port != guestPort {
			return ln, nil
		}
		ln.Close()
	}
	return nil, coded.New(CodePortInUse, map[string]any{"host_port": port}, "no free loopback port found")
}

// Addr is where the forward listens: 127.0.0.1:HostPort.
func (f *Forward) Addr() string { return f.ln.Addr().String() }

// Done is closed when the forward has stopped.
func (f *Forward) Done() <-chan struct{} { return f.done }

// Close stops listening and ends every connection the forward carries.
func (f *Forward) Close() error {
	f.closed.Do(func() {
		f.ln.Close()
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		close(f.done)
	})
	return nil
}

func (f *Forward) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			f.Close()
			return
		}
		if f.admit != nil && f.admit() != nil {
			c.Close()
			f.Close()
			return
		}
		f.Connections.Add(1)
		go f.carry(c)
	}
}

// track registers a connection to close with the forward; false when the
// forward is already closed.
func (f *Forward) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.done:
		return false
	default:
	}
	f.conns[c] = true
	return true
}

func (f *Forward) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// carry copies one connection both ways until either side ends.
func (f *Forward) carry(host net.Conn) {
	if !f.track(host) {
		host.Close()
		return
	}
	defer f.untrack(host)
	ctx, cancel := context.WithTimeout(f.ctx, guestDialTimeout)
	guest, err := f.dial(ctx)
	cancel()
	if err != nil {
		f.Failures.Add(1)
		return
	}
	if !f.track(guest) {
		guest.Close()
		return
	}
	defer f.untrack(guest)
	finished := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, count *atomic.Int64) {
		io.Copy(meteredWriter{dst, count}, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite() // pass the end of one direction on, as a half-close
		}
		finished <- struct{}{}
	}
	go pipe(guest, host, &f.BytesIn)
	go pipe(host, guest, &f.BytesOut)
	<-finished
	<-finished
}

// String names the forward as kubectl prints one.
func (f *Forward) String() string {
	return fmt.Sprintf("127.0.0.1:%d -> %s:%d", f.HostPort, f.Sandbox, f.GuestPort)
}

// meteredWriter counts bytes as they pass, so a long-lived connection's
// traffic shows while it lasts. A write is counted before it is made (and
// what it did not write taken back): a peer that has read the bytes, and
// then asks for the forward's figures, finds them counted.
type meteredWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c meteredWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	n, err := c.w.Write(p)
	if n < len(p) {
		c.n.Add(int64(n - len(p)))
	}
	return n, err
}
