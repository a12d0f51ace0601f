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
	"strconv"
	"strings"
	"sync"
	"time"
)

// session is one client connection.
type session struct {
	p      *Proxy
	client net.Conn
	head   *headLimiter
	br     *bufio.Reader
	act    *activity
	mu     sync.Mutex
	up     net.Conn // the upstream connection in use, closed by abort
	done   bool
}

// setUpstream records the upstream connection abort must close.
func (s *session) setUpstream(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done && c != nil {
		c.Close()
	}
	s.up = c
}

// abort closes the client and upstream connections, unblocking every read
// and write of the session (idle timeout, shutdown).
func (s *session) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	s.client.Close()
	if s.up != nil {
		s.up.Close()
	}
}

// headLimiter caps what a request head may read; the body is read with
// the cap lifted.
type headLimiter struct {
	r         io.Reader
	remaining int // < 0: no cap
	// capture, when set, keeps the bytes read while capped (the head and
	// some read-ahead), for fields the http package drops while parsing.
	capture *[]byte
}

func (h *headLimiter) Read(b []byte) (int, error) {
	if h.remaining == 0 {
		return 0, errHeadTooLarge
	}
	if h.remaining > 0 && len(b) > h.remaining {
		b = b[:h.remaining]
	}
	n, err := h.r.Read(b)
	if h.remaining > 0 {
		h.remaining -= n
		if h.capture != nil {
			*h.capture = append(*h.capture, b[:n]...)
		}
	}
	return n, err
}

var errHeadTooLarge = errors.New("request head too large")

// readRequest reads the next request head. A first request must arrive
// whole within HeaderTimeout; a later one (keep-alive) may wait IdleTimeout
// for its first byte, then has HeaderTimeout for the rest. Failures are
// answered and logged; ok is false when the connection is done.
func (s *session) readRequest(first bool) (*http.Request, bool) {
	cfg := s.p.cfg
	if !first {
		s.head.remaining = cfg.MaxHeaderBytes
		s.client.SetReadDeadline(s.p.deadline(cfg.IdleTimeout))
		if _, err := s.br.Peek(1); err != nil {
			return nil, false // the client is done, or idle
		}
	}
	s.head.remaining = cfg.MaxHeaderBytes
	s.client.SetReadDeadline(s.p.deadline(cfg.HeaderTimeout))
	req, err := http.ReadRequest(s.br)
	s.head.remaining = -1
	s.client.SetReadDeadline(time.Time{})
	if err != nil {
		s.refuseHead(err, first)
		return nil, false
	}
	s.act.touch()
	return req, true
}

// refuseHead answers a request head that could not be read.
func (s *session) refuseHead(err error, first bool) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF) && !first, errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, errHeadTooLarge):
		s.reply(http.StatusRequestHeaderFieldsTooLarge, "request head over the size limit")
		s.p.log(Entry{Decision: Denied, Reason: "request head over the size limit"})
	case errors.As(err, &ne) && ne.Timeout():
		s.reply(http.StatusRequestTimeout, "request head not received in time")
		s.p.log(Entry{Decision: Denied, Reason: "request head not received in time"})
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		s.p.log(Entry{Decision: Denied, Reason: "connection closed before a whole request head"})
	default:
		s.reply(http.StatusBadRequest, "malformed request")
		s.p.log(Entry{Decision: Denied, Reason: "malformed request: " + err.Error()})
	}
}

// reply writes a short plain-text response that closes the connection.
func (s *session) reply(code int, msg string) {
	body := "sbf egress proxy: " + msg + "\n"
	s.client.SetWriteDeadline(s.p.deadline(s.p.cfg.HeaderTimeout))
	fmt.Fprintf(s.client, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", code, http.StatusText(code), len(body), body)
	s.client.SetWriteDeadline(time.Time{})
}

// refusal is a request the proxy will not carry, with the status to answer.
type refusal struct {
	code   int
	reason string
	addr   string
	// failed marks an allowed destination that could not be reached (logged
	// as failed, with the failure as reason) rather than a policy refusal.
	failed bool
}

func (r *refusal) Error() string { return r.reason }

// dial resolves host (only when the policy allows it by name), checks each
// address, and connects to the first allowed one that answers.
func (s *session) dial(ctx context.Context, host string, port int) (net.Conn, netip.Addr, error) {
	cfg := s.p.cfg
	pol := cfg.Policy
	if _, err := netip.ParseAddr(host); err != nil && !pol.Allows(host, port) {
		reason := fmt.Sprintf("%s port %d is not in the allowlist", host, port)
		if pol.Mode == ModeDeny {
			reason = "egress is deny"
		}
		return nil, netip.Addr{}, &refusal{code: http.StatusForbidden, reason: reason}
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	addrs, err := resolve(rctx, cfg.Resolver, host)
	if err != nil {
		return nil, netip.Addr{}, &refusal{code: http.StatusBadGateway, reason: "resolving: " + err.Error(), failed: true}
	}
	var allowed []netip.Addr
	var why *refusal
	for _, a := range addrs {
		if ok, reason := pol.Check(host, port, a, cfg.HostAddrs); ok {
			allowed = append(allowed, a)
		} else if why == nil {
			why = &refusal{code: http.StatusForbidden, reason: reason, addr: a.String()}
		}
	}
	if len(allowed) == 0 {
		return nil, netip.Addr{}, why
	}
	var errs []error
	for _, a := range allowed {
		c, err := cfg.Dialer.DialContext(rctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(port)))
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
	}
	code := http.StatusBadGateway
	if rctx.Err() != nil {
		code = http.StatusGatewayTimeout
	}
	return nil, allowed[0], &refusal{code: code, reason: "connecting: " + errors.Join(errs...).Error(),
		addr: allowed[0].String(), failed: true}
}

// hostPort reads a host and port; port is required unless defPort > 0.
func hostPort(host, port string, defPort int) (string, int, error) {
	if port == "" && defPort > 0 {
		port = strconv.Itoa(defPort)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || host == "" || strings.HasPrefix(port, "+") {
		return "", 0, fmt.Errorf("%q port %q: want a host and a port from 1 to 65535", host, port)
	}
	return NormalizeHost(host), n, nil
}
