package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		o  HTTPOptions
		ok bool
	}{
		{HTTPOptions{Addr: "127.0.0.1:8765"}, true},
		{HTTPOptions{Addr: "localhost:8765"}, true},
		{HTTPOptions{Addr: "[::1]:8765"}, true},
		{HTTPOptions{Addr: "0.0.0.0:8765"}, false},
		{HTTPOptions{Addr: "0.0.0.0:8765", AllowNonLoopback: true}, true}, // the token is asked all the same
		{HTTPOptions{Addr: "no-port"}, false},
	} {
		if err := CheckListen(tc.o); (err == nil) != tc.ok {
			t.Errorf("%+v: err = %v", tc.o, err)
		}
	}
}

// Every request needs the bearer token, on loopback too (a guest reaches
// the host's loopback through QEMU's alias for it; any local process and,
// by DNS rebinding, any web page can reach the port), and on a loopback
// listener a loopback Host and Origin.
func TestGuardRejectsForeignOriginsAndMissingTokens(t *testing.T) {
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ })
	const ok = "Bearer tok"
	for _, tc := range []struct {
		token, host, origin, auth string
		offLoopback               bool
		want                      int
	}{
		{"tok", "127.0.0.1:8765", "", ok, false, 200},
		{"tok", "127.0.0.1:8765", "http://localhost:6274", ok, false, 200},
		{"tok", "localhost:8765", "http://127.0.0.1", ok, false, 200},
		{"tok", "[::1]:8765", "http://[::1]:3000", ok, false, 200},
		{"tok", "127.0.0.1:8765", "https://evil.example", ok, false, 403},
		{"tok", "127.0.0.1:8765", "http://127.0.0.1.evil.example", ok, false, 403},
		{"tok", "127.0.0.1:8765", "null", ok, false, 403},
		{"tok", "evil.example:8765", "", ok, false, 403}, // DNS rebinding
		{"tok", "127.0.0.1.evil.example", "", ok, false, 403},
		{"tok", "", "", ok, false, 403},
		{"tok", "sbf.lan:8765", "", ok, true, 200}, // off loopback: the token alone
		{"tok", "127.0.0.1:8765", "", "", false, 401},
		{"tok", "127.0.0.1:8765", "", "", true, 401},
		{"tok", "127.0.0.1:8765", "", "Bearer nope", false, 401},
		{"tok", "127.0.0.1:8765", "", "bearer tok", false, 200}, // the scheme is case-insensitive (RFC 9110 §11.1)
		{"tok", "127.0.0.1:8765", "", "BEARER tok", false, 200},
		{"tok", "127.0.0.1:8765", "", "Basic tok", false, 401},
		{"tok", "127.0.0.1:8765", "", "Bearertok", false, 401},
		{"tok", "127.0.0.1:8765", "", "Bearer ", false, 401},
		{"", "127.0.0.1:8765", "", "Bearer ", false, 401}, // no token: nobody
		{"", "127.0.0.1:8765", "", "", false, 401},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader("{}"))
		req.Host = tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		before := reached
		guard(next, access{token: tc.token, loopbackHost: !tc.offLoopback}).ServeHTTP(rec, req)
		if rec.Code != tc.want || (tc.want == 200) != (reached > before) {
			t.Errorf("token %q host %q origin %q auth %q: status %d, want %d", tc.token, tc.host, tc.origin, tc.auth,
				rec.Code, tc.want)
		}
	}
}

func TestReadSettings(t *testing.T) {
	env := map[string]string{"MAX_INSTANCES": "5", "DEFAULT_TTL_MINUTES": "15", "MAX_TTL_MINUTES": "90",
		"SANDBOX_SWEEPER_INTERVAL_SECONDS": "30", "SANDBOX_BACKEND": " Lima ", "MCP_HTTP_HOST": "::1",
		"MCP_HTTP_PORT": "9000", "MCP_ENABLE_HTTP": "0", "MCP_SESSION_ID": "agent-7"}
	s, err := ReadSettings(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.DefaultTTL != 15*time.Minute ||
		s.SweepInterval != 30*time.Second ||
		s.Backend != "lima" || s.HTTPAddr() != "[::1]:9000" || s.EnableHTTP == nil || *s.EnableHTTP ||
		s.Session != "agent-7" {
		t.Errorf("settings = %+v", s)
	}
	o := s.overrides()
	// MAX_INSTANCES and MAX_TTL_MINUTES are ceilings (package policy), not
	// request values a tool's overrides could replace.
	if o["lease"].(map[string]any)["default_ttl"] != "15m0s" || o["lease"].(map[string]any)["max_ttl"] != nil ||
		o["lease"].(map[string]any)["max_instances"] != nil || o["vm"].(map[string]any)["driver"] != "lima" {
		t.Errorf("overrides = %v", o)
	}
	defaults, _ := ReadSettings(func(string) string { return "" })
	if defaults.HTTPAddr() != "127.0.0.1:8765" || defaults.SweepInterval != time.Minute ||
		len(defaults.overrides()) != 0 {
		t.Errorf("defaults = %+v", defaults)
	}
	for _, bad := range []map[string]string{{"SANDBOX_BACKEND": "docker"}, {"DEFAULT_TTL_MINUTES": "many"},
		{"MCP_ENABLE_HTTP": "maybe"}} {
		if _, err := ReadSettings(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

// MCP_HTTP_HOST off loopback without MCP_HTTP_ALLOW_NON_LOOPBACK is
// loopback with a warning, as in v1; with the opt-in it is kept (and
// CheckListen then wants a token).
func TestNonLoopbackHostFromTheEnvironmentFallsBackToLoopback(t *testing.T) {
	s, err := ReadSettings(func(k string) string { return map[string]string{"MCP_HTTP_HOST": "0.0.0.0"}[k] })
	if err != nil || s.HTTPAddr() != "127.0.0.1:8765" || len(s.Warnings) != 1 ||
		!strings.Contains(s.Warnings[0], "MCP_HTTP_HOST=0.0.0.0") {
		t.Fatalf("settings %+v, %v", s, err)
	}
	if err := CheckListen(HTTPOptions{Addr: s.HTTPAddr()}); err != nil {
		t.Errorf("the fallback address is refused: %v", err)
	}
	allowed := map[string]string{"MCP_HTTP_HOST": "0.0.0.0", "MCP_HTTP_ALLOW_NON_LOOPBACK": "1"}
	s, err = ReadSettings(func(k string) string { return allowed[k] })
	if err != nil || s.HTTPAddr() != "0.0.0.0:8765" || len(s.Warnings) != 0 {
		t.Errorf("with the opt-in: %+v, %v", s, err)
	}
	local := map[string]string{"MCP_HTTP_HOST": "localhost"}
	if s, _ = ReadSettings(func(k string) string { return local[k] }); s.HTTPAddr() != "localhost:8765" ||
		len(s.Warnings) != 0 {
		t.Errorf("localhost: %+v", s)
	}
}
