package mcpserver

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
)

// Settings are SandboxForge v1's server environment variables, read with
// their v1 meaning so an existing client configuration keeps working when
// only the command changes. MAX_INSTANCES and MAX_TTL_MINUTES are not
// here: they are operator ceilings, which the policy reads (package
// policy) for every door.
type Settings struct {
	DefaultTTL    time.Duration // DEFAULT_TTL_MINUTES → [lease] default_ttl
	Backend       string        // SANDBOX_BACKEND → [vm] driver
	SweepInterval time.Duration // SANDBOX_SWEEPER_INTERVAL_SECONDS: the loop's longest sleep
	Session       string        // MCP_SESSION_ID, reported as owner_session
	HTTPHost      string        // MCP_HTTP_HOST
	HTTPPort      int           // MCP_HTTP_PORT
	EnableHTTP    *bool         // MCP_ENABLE_HTTP; nil when unset
	AllowRemote   bool          // MCP_HTTP_ALLOW_NON_LOOPBACK
	MaxBodyBytes  int64         // MCP_HTTP_MAX_BODY_BYTES; 0: DefaultMaxBodyBytes
	MaxSessions   int           // MCP_HTTP_MAX_SESSIONS; 0: DefaultMaxSessions
	SessionIdle   time.Duration // MCP_HTTP_SESSION_IDLE_SECONDS; 0: DefaultSessionIdle
	// ProgressBeat is MCP_PROGRESS_INTERVAL_SECONDS: the longest a call with
	// a progress token goes without a notification; 0: progressBeat.
	ProgressBeat time.Duration
	// ExecSessionIdle ends an exec session nobody called for this long
	// (SBF_EXEC_SESSION_IDLE_SECONDS; 0: sandbox.DefaultSessionIdle);
	// MaxExecSessions caps the open ones of each workspace
	// (SBF_MAX_EXEC_SESSIONS; 0: sandbox.DefaultMaxSessions), and
	// MaxExecSessionsTotal the server's (SBF_MAX_EXEC_SESSIONS_TOTAL; 0:
	// sandbox.DefaultMaxSessionsTotal).
	ExecSessionIdle      time.Duration
	MaxExecSessions      int
	MaxExecSessionsTotal int
	// MaxToolCalls is SBF_MAX_TOOL_CALLS: the tool calls the server works on
	// at once (8 times as many may wait, the rest are SERVER_BUSY); 0:
	// DefaultMaxToolCalls.
	MaxToolCalls int
	// Toolsets are SBF_TOOLSETS (or --toolsets): the toolsets tools/list
	// holds (toolsets.go); none: core and every v1 tool.
	Toolsets []string
	// Warnings are what the variables asked for and did not get (an
	// MCP_HTTP_HOST off loopback without MCP_HTTP_ALLOW_NON_LOOPBACK).
	Warnings []string
}

// ReadSettings parses the v1 variables. Unlike v1, a malformed value is an
// error naming the variable instead of a crash or a silent default.
func ReadSettings(getenv func(string) string) (Settings, error) {
	s := Settings{SweepInterval: time.Minute, Session: "local", HTTPHost: "127.0.0.1", HTTPPort: 8765}
	var errs []string
	num := func(name string, min int) (int, bool) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			errs = append(errs, fmt.Sprintf("%s=%q: want an integer ≥ %d", name, v, min))
			return 0, false
		}
		return n, true
	}
	if n, ok := num("DEFAULT_TTL_MINUTES", 1); ok {
		s.DefaultTTL = time.Duration(n) * time.Minute
	}
	if n, ok := num("SANDBOX_SWEEPER_INTERVAL_SECONDS", 1); ok {
		s.SweepInterval = time.Duration(n) * time.Second
	}
	if n, ok := num("MCP_HTTP_PORT", 0); ok {
		s.HTTPPort = n
	}
	if n, ok := num("MCP_HTTP_MAX_BODY_BYTES", 1024); ok {
		s.MaxBodyBytes = int64(n)
	}
	if n, ok := num("MCP_HTTP_MAX_SESSIONS", 1); ok {
		s.MaxSessions = n
	}
	if n, ok := num("MCP_HTTP_SESSION_IDLE_SECONDS", 1); ok {
		s.SessionIdle = time.Duration(n) * time.Second
	}
	if n, ok := num("MCP_PROGRESS_INTERVAL_SECONDS", 1); ok {
		s.ProgressBeat = time.Duration(n) * time.Second
	}
	if n, ok := num("SBF_EXEC_SESSION_IDLE_SECONDS", 1); ok {
		s.ExecSessionIdle = time.Duration(n) * time.Second
	}
	if n, ok := num("SBF_MAX_EXEC_SESSIONS", 1); ok {
		s.MaxExecSessions = n
	}
	if n, ok := num("SBF_MAX_EXEC_SESSIONS_TOTAL", 1); ok {
		s.MaxExecSessionsTotal = n
	}
	if n, ok := num("SBF_MAX_TOOL_CALLS", 1); ok {
		s.MaxToolCalls = n
	}
	if sets, err := ParseToolsets(getenv("SBF_TOOLSETS")); err != nil {
		errs = append(errs, "SBF_TOOLSETS: "+err.Error())
	} else {
		s.Toolsets = sets
	}
	if b := strings.ToLower(strings.TrimSpace(getenv("SANDBOX_BACKEND"))); b != "" {
		if allowed := append([]string{"auto"}, drivers.Names()...); slices.Contains(allowed, b) {
			s.Backend = b
		} else {
			errs = append(errs, fmt.Sprintf("Unsupported SANDBOX_BACKEND '%s'. Allowed: %s", b, strings.Join(allowed, ", ")))
		}
	}
	if v := getenv("MCP_SESSION_ID"); v != "" {
		s.Session = v
	}
	if v := strings.TrimSpace(getenv("MCP_HTTP_HOST")); v != "" {
		s.HTTPHost = v
	}
	if v, ok, err := parseBool(getenv("MCP_ENABLE_HTTP")); err != nil {
		errs = append(errs, "MCP_ENABLE_HTTP: "+err.Error())
	} else if ok {
		s.EnableHTTP = &v
	}
	if v, ok, err := parseBool(getenv("MCP_HTTP_ALLOW_NON_LOOPBACK")); err != nil {
		errs = append(errs, "MCP_HTTP_ALLOW_NON_LOOPBACK: "+err.Error())
	} else if ok {
		s.AllowRemote = v
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("invalid environment: %s", strings.Join(errs, "; "))
	}
	s.keepLoopback()
	return s, nil
}

// keepLoopback is v1's rule for MCP_HTTP_HOST: an address off loopback
// without MCP_HTTP_ALLOW_NON_LOOPBACK is replaced by 127.0.0.1, with a
// warning, rather than refused (a flag such as --http 0.0.0.0:8765 still is:
// the operator typed it). localhost and ::1 stay: they are loopback, though
// v1 replaced them too.
func (s *Settings) keepLoopback() {
	if s.AllowRemote || streamhttp.IsLoopback(s.HTTPHost) {
		return
	}
	s.Warnings = append(s.Warnings, fmt.Sprintf("MCP_HTTP_HOST=%s is not a loopback address and "+
		"MCP_HTTP_ALLOW_NON_LOOPBACK is not set: listening on 127.0.0.1 instead, as SandboxForge v1 did "+
		"(set MCP_HTTP_ALLOW_NON_LOOPBACK=1 and pass --token-file to listen there)", s.HTTPHost))
	s.HTTPHost = "127.0.0.1"
}

func parseBool(v string) (value, set bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return false, false, nil
	case "1", "true", "yes", "on":
		return true, true, nil
	case "0", "false", "no", "off":
		return false, true, nil
	}
	return false, false, fmt.Errorf("want 1/true/yes/on or 0/false/no/off, got %q", v)
}

// HTTPAddr is MCP_HTTP_HOST:MCP_HTTP_PORT.
func (s Settings) HTTPAddr() string { return net.JoinHostPort(s.HTTPHost, strconv.Itoa(s.HTTPPort)) }

// overrides is the request layer these settings put over every
// workspace the server converges.
func (s Settings) overrides() map[string]any {
	out := map[string]any{}
	if s.DefaultTTL > 0 {
		out["lease"] = map[string]any{"default_ttl": s.DefaultTTL.String()}
	}
	if s.Backend != "" {
		out["vm"] = map[string]any{"driver": s.Backend}
	}
	return out
}

func mergeJSON(base map[string]any, extra json.RawMessage) (json.RawMessage, error) {
	merged := map[string]any{}
	for k, v := range base {
		merged[k] = v
	}
	if len(extra) > 0 && string(extra) != "null" {
		var add map[string]any
		if err := json.Unmarshal(extra, &add); err != nil {
			return nil, fmt.Errorf("overrides must be a JSON object: %w", err)
		}
		deepMerge(merged, add)
	}
	return json.Marshal(merged)
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		sm, ok1 := v.(map[string]any)
		dm, ok2 := dst[k].(map[string]any)
		if ok1 && ok2 {
			cp := map[string]any{}
			for kk, vv := range dm {
				cp[kk] = vv
			}
			deepMerge(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}
