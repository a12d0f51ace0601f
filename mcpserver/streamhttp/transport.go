// Package streamhttp is the MCP server's Streamable HTTP transport behind
// sbf's checks and limits: the bearer token, loopback Host and Origin on a
// loopback listener, a bound on request bodies, capped and expiring
// sessions. It knows nothing of sbf's tools, so it is built (and fuzzed)
// without the engine.
package streamhttp

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Options secure and bound the transport.
type Options struct {
	Addr             string // host:port
	AllowNonLoopback bool   // --allow-non-loopback / MCP_HTTP_ALLOW_NON_LOOPBACK
	// Token is the bearer token every request must carry, loopback
	// included (internal/mcptoken); empty refuses every request.
	Token string
	// MaxBodyBytes caps a request body (413 beyond it); zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSessions caps live sessions; a new one evicts the longest idle.
	// Zero means DefaultMaxSessions.
	MaxSessions int
	// SessionIdle ends a session after this long without a request; zero
	// means DefaultSessionIdle.
	SessionIdle time.Duration

	// Clock times sessions; nil: the real clock (a session's idle time is
	// real time whatever SBF_NOW says).
	Clock clock.Clock
}

// Defaults of the HTTP limits: far above what an MCP client sends (tool
// arguments are small JSON), far below what hurts the server.
const (
	DefaultMaxBodyBytes = 4 << 20
	DefaultMaxSessions  = 1000
	DefaultSessionIdle  = 30 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	return o
}

// CheckListen refuses an address off loopback unless explicitly allowed.
// localhost and ::1 count as loopback. Every request needs the bearer
// token wherever the server listens.
func CheckListen(o Options) error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", o.Addr, err)
	}
	if IsLoopback(host) || o.AllowNonLoopback {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s: it is not a loopback address; pass --allow-non-loopback "+
		"(or MCP_HTTP_ALLOW_NON_LOOPBACK=1) to expose sbf on the network (every request needs its bearer token)",
		o.Addr)
}

// access is what a request must show: the bearer token, and, on a server
// listening on loopback, a loopback Host (a web page whose name was made
// to resolve to 127.0.0.1 sends its own name: DNS rebinding).
func (o Options) access() access {
	host, _, err := net.SplitHostPort(o.Addr)
	return access{token: o.Token, loopbackHost: o.Addr == "" || err == nil && IsLoopback(host)}
}

// Handler is the Streamable HTTP transport at /mcp behind sbf's checks and
// limits. Close stops its session sweeper.
type Handler struct {
	handler  http.Handler
	sessions *sessionTable
	stop     chan struct{}
	once     sync.Once
}

// New builds the transport in front of srv. Its sessions expire after
// o.SessionIdle and are capped at o.MaxSessions; bodies over
// o.MaxBodyBytes get 413 with the error envelope.
func New(srv *server.MCPServer, o Options) *Handler {
	o = o.withDefaults()
	c := o.Clock
	if c == nil {
		c = clock.Real{}
	}
	table := newSessionTable(o.MaxSessions, o.SessionIdle, c.Now)
	mcp := server.NewStreamableHTTPServer(srv, server.WithEndpointPath("/mcp"), server.WithSessionIdManager(table))
	table.end = func(id string) { endSession(mcp, id) }
	h := &Handler{handler: Guard(limitBody(mcp, o.MaxBodyBytes), o), sessions: table, stop: make(chan struct{})}
	go h.sweep(c.NewTicker(max(o.SessionIdle/4, time.Second)))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// Close stops the sweeper; sessions end with the process.
func (h *Handler) Close() { h.once.Do(func() { close(h.stop) }) }

// Sessions is the number of live sessions.
func (h *Handler) Sessions() int { return h.sessions.Len() }

// SweepSessions ends every session idle for longer than the idle time now,
// as the sweeper does in its turn, and says how many it ended.
func (h *Handler) SweepSessions() int { return h.sessions.Sweep() }

func (h *Handler) sweep(t clock.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C():
			// After a burst of sessions ends, hand the memory back now
			// rather than over the runtime's next minutes.
			if h.SweepSessions() >= 100 {
				debug.FreeOSMemory()
			}
		}
	}
}

// endSession has mcp-go release a session as if its client had sent
// DELETE: that is the one door to all of the state it keeps per session.
func endSession(mcp http.Handler, id string) {
	req, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	mcp.ServeHTTP(discard{header: http.Header{}}, req)
}

type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// NewServer wraps a handler with timeouts, so no client holds a
// connection or a goroutine indefinitely. Writes may take as long as the
// longest tool call (an apply that boots VMs); reads may not.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Hour,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// limitBody refuses a POST body over max bytes with 413 and the error
// envelope, reading no more than max of it: a declared length over the
// limit is refused before any of it is read.
func limitBody(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > max {
			tooLarge(w, max)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			tooLarge(w, max)
			return
		case err != nil:
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// tooLarge answers as JSON-RPC (what the client speaks) carrying the v1
// envelope as the error's data.
func tooLarge(w http.ResponseWriter, max int64) {
	te := coded.New("REQUEST_TOO_LARGE", map[string]any{"limit_bytes": max},
		"the request body is larger than the limit of %d bytes", max)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": mcpgo.INVALID_REQUEST, "message": te.Message, "data": te}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	w.Write(body)
}

type access struct {
	token        string
	loopbackHost bool
}

// Guard lets a request through only with a loopback Origin (or none), a
// loopback Host when o.Addr is on loopback, and o.Token as the bearer
// token. An empty token lets nothing through.
func Guard(next http.Handler, o Options) http.Handler {
	return guard(next, o.access())
}

func guard(next http.Handler, a access) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
			http.Error(w, "Forbidden: Origin "+clipHeader(origin)+" is not a loopback origin", http.StatusForbidden)
			return
		}
		if a.loopbackHost && !loopbackHostHeader(r.Host) {
			http.Error(w, "Forbidden: Host "+clipHeader(r.Host)+" is not a loopback address", http.StatusForbidden)
			return
		}
		got, ok := bearer(r.Header.Get("Authorization"))
		if !ok || a.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sbf"`)
			http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHostHeader reads a Host header (a name or address, with or
// without a port) and says whether it names loopback.
func loopbackHostHeader(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host != "" && IsLoopback(host)
}

// clipHeader bounds a header quoted back to the caller.
func clipHeader(v string) string {
	if len(v) > 200 {
		return v[:200] + "…"
	}
	return v
}

// bearer reads an Authorization header's bearer token; the scheme is
// case-insensitive (RFC 9110 §11.1), so "bearer" and "BEARER" count.
func bearer(header string) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return IsLoopback(u.Hostname())
}

// IsLoopback says whether host (a name or an address, bracketed or not)
// is loopback: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
