package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// HTTPOptions secure the Streamable HTTP transport.
type HTTPOptions struct {
	Addr             string // host:port
	AllowNonLoopback bool   // --allow-non-loopback / MCP_HTTP_ALLOW_NON_LOOPBACK
	Token            string // bearer token; required off loopback
}

// CheckListen refuses an address off loopback unless explicitly allowed,
// and then only with a bearer token. localhost and ::1 count as loopback.
func CheckListen(o HTTPOptions) error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", o.Addr, err)
	}
	if isLoopback(host) {
		return nil
	}
	if !o.AllowNonLoopback {
		return fmt.Errorf("refusing to listen on %s: it is not a loopback address; pass --allow-non-loopback "+
			"(or MCP_HTTP_ALLOW_NON_LOOPBACK=1) together with --token-file to expose sbf on the network", o.Addr)
	}
	if o.Token == "" {
		return fmt.Errorf("listening on non-loopback %s needs a bearer token: pass --token-file FILE", o.Addr)
	}
	return nil
}

// HTTPHandler serves MCP at /mcp behind the Origin and token checks.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	mcp := server.NewStreamableHTTPServer(s.mcp, server.WithEndpointPath("/mcp"))
	return guard(mcp, o.Token)
}

// guard rejects requests from non-loopback origins (DNS rebinding: a web
// page must not drive a local server through the browser) and, when a
// token is set, requests without it.
func guard(next http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
			http.Error(w, "Forbidden: Origin "+origin+" is not a loopback origin", http.StatusForbidden)
			return
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sbf"`)
				http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopback(u.Hostname())
}

func isLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
