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
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Defaults of the Config limits.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultDialTimeout    = 15 * time.Second
	DefaultMaxConns       = 128
	DefaultMaxHeaderBytes = 32 << 10
)

// Config is what a Proxy enforces and how. Zero fields take the defaults.
type Config struct {
	Sandbox string
	Policy  Policy
	// Resolver resolves allowed names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dialer opens upstream connections; nil is a *net.Dialer.
	Dialer Dialer
	// Log receives one entry per tunnel or request; nil logs nothing.
	Log *Log
	// Clock stamps log entries and runs the idle watchdog; nil is clock.Real.
	Clock clock.Clock
	// HostAddrs are this machine's own addresses, refused like private ones;
	// nil reads the interfaces' addresses once, in New.
	HostAddrs []netip.Addr
	// HeaderTimeout bounds reading a request head, and the TLS ClientHello of
	// a tunnel to port 443. Connection deadlines are wall-clock time.
	HeaderTimeout time.Duration
	// IdleTimeout closes a connection with no byte either way for this long.
	IdleTimeout time.Duration
	DialTimeout time.Duration
	// MaxConns caps client connections; more are answered 503 and closed.
	MaxConns int
	// MaxHeaderBytes caps a request head; a larger one gets 431.
	MaxHeaderBytes int
}

// Proxy is an HTTP proxy (CONNECT and absolute-URI requests) that lets a
// sandbox reach only what its policy allows.
type Proxy struct {
	cfg   Config
	slots chan struct{}
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Proxy, error) {
	if cfg.Policy.Mode == "" {
		return nil, errors.New("egress proxy: the policy has no mode")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.HostAddrs == nil {
		cfg.HostAddrs = interfaceAddrs()
	}
	setDefault(&cfg.HeaderTimeout, DefaultHeaderTimeout)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.DialTimeout, DefaultDialTimeout)
	setDefault(&cfg.MaxConns, DefaultMaxConns)
	setDefault(&cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	return &Proxy{cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), conns: map[net.Conn]struct{}{}}, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Serve accepts connections on ln until ctx ends or ln fails, then closes
// ln and every open connection and waits for their handlers.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		p.closeAll()
	})
	defer func() {
		stop()
		ln.Close()
		p.closeAll()
		wg.Wait()
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("egress proxy: accepting: %w", err)
			}
			// Out of file descriptors and the like pass; wait (in real
			// time: it is the system that must catch up) and go on.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			clock.Sleep(ctx, clock.Real{}, backoff)
			continue
		}
		backoff = 0
		select {
		case p.slots <- struct{}{}:
		default:
			p.refuseBusy(c)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.slots }()
			p.track(c, true)
			served := p.takeHandoff(c)
			p.track(c, false)
			p.ServeConn(ctx, served)
		}()
	}
}

// refuseBusy answers a connection over MaxConns without reading from it.
func (p *Proxy) refuseBusy(c net.Conn) {
	c.SetWriteDeadline(p.deadline(time.Second))
	io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	c.Close()
	p.log(Entry{Decision: Denied, Reason: fmt.Sprintf("over %d connections", p.cfg.MaxConns)})
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// ServeConn serves one client connection (requests in turn, or one tunnel)
// and closes it. Serve calls it; a caller with a single connection (an inetd
// style relay) may too. It does not count against MaxConns.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{p: p, client: c, head: &headLimiter{r: c}, act: newActivity(p.cfg.Clock)}
	s.br = bufio.NewReader(s.head)
	stop := context.AfterFunc(ctx, s.abort)
	defer stop()
	go s.act.watch(ctx, p.cfg.IdleTimeout, s.abort)
	for first := true; ; first = false {
		req, ok := s.readRequest(first)
		if !ok {
			return
		}
		if req.Method == http.MethodConnect {
			s.tunnel(ctx, req)
			return
		}
		if !s.forward(ctx, req) {
			return
		}
	}
}

// deadline is a connection deadline d from now. Deadlines are wall-clock
// instants, so this reads the real clock whatever Config.Clock says.
func (p *Proxy) deadline(d time.Duration) time.Time { return clock.Real{}.Now().Add(d) }

func (p *Proxy) log(e Entry) {
	if p.cfg.Log == nil {
		return
	}
	e.Time = p.cfg.Clock.Now().UTC()
	e.Sandbox = p.cfg.Sandbox
	p.cfg.Log.Write(e) // a full disk must not stop the sandbox's traffic
}
