package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
)

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
	if err := streamhttp.CheckListen(streamhttp.Options{Addr: s.HTTPAddr()}); err != nil {
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
