package streamhttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{Addr: "127.0.0.1:8765"}, true},
		{Options{Addr: "localhost:8765"}, true},
		{Options{Addr: "[::1]:8765"}, true},
		{Options{Addr: "0.0.0.0:8765"}, false},
		{Options{Addr: "0.0.0.0:8765", AllowNonLoopback: true}, true}, // the token is asked all the same
		{Options{Addr: "no-port"}, false},
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

func TestZeroOptionsMeanTheDefaults(t *testing.T) {
	if o := (Options{}).withDefaults(); o.MaxBodyBytes != DefaultMaxBodyBytes ||
		o.MaxSessions != DefaultMaxSessions || o.SessionIdle != DefaultSessionIdle {
		t.Errorf("defaults = %+v", o)
	}
}
