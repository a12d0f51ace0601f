package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
)

// countingReader counts what the server read of a body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// testToken is the bearer token of the test servers.
const testToken = "test-token-0123456789abcdefghijklmnopqrstuv"

// authorize makes req what a local client sends: its Host is loopback and
// it carries the token.
func authorize(req *http.Request) {
	req.Host = "127.0.0.1:8765"
	req.Header.Set("Authorization", "Bearer "+testToken)
}

func post(h http.Handler, body io.Reader, length int64, session string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", body)
	authorize(req)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func initialize(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := post(h, strings.NewReader(initBody), int64(len(initBody)), "")
	if rec.Code != http.StatusOK {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	return rec.Header().Get(server.HeaderKeySessionID)
}

// A body over the limit is answered 413 with the envelope, and costs at
// most the limit to refuse: nothing when its length is declared.
func TestBodyOverTheLimitIs413WithTheEnvelope(t *testing.T) {
	f := newFixture(t, simSpec)
	h := streamhttp.New(f.srv.MCP(), streamhttp.Options{MaxBodyBytes: 1 << 20, Token: testToken})
	defer h.Close()
	big := func() io.Reader {
		return io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call",`+
			`"params":{"name":"validate_workspace_config","arguments":{"workspace_root":"`),
			bytes.NewReader(bytes.Repeat([]byte("A"), 100<<20)), strings.NewReader(`"}}}`))
	}
	for _, declared := range []bool{true, false} {
		body := &countingReader{r: big()}
		length := int64(-1)
		if declared {
			length = 100<<20 + 200
		}
		rec := post(h, body, length, "")
		var resp struct {
			Error struct {
				Code int         `json:"code"`
				Data coded.Error `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != http.StatusRequestEntityTooLarge ||
			resp.Error.Data.Code != "REQUEST_TOO_LARGE" || resp.Error.Data.Details["limit_bytes"] != float64(1<<20) {
			t.Fatalf("declared %v: %d %.300s", declared, rec.Code, rec.Body)
		}
		if read := body.n.Load(); read > 1<<20+64<<10 || declared && read > 0 {
			t.Errorf("declared %v: refusing the body read %d bytes of it", declared, read)
		}
		if rec.Body.Len() > 1<<10 {
			t.Errorf("the refusal echoes the body: %d bytes", rec.Body.Len())
		}
	}
	if id := initialize(t, h); id == "" {
		t.Error("a small request was refused")
	}
}

// A call under the limit whose argument is echoed in an error gets a
// response that stays small however large the argument.
func TestErrorsDoNotEchoLargeArguments(t *testing.T) {
	testutil.WithoutRace(t, "it sends MiB arguments, a call at a time")
	f := newFixture(t, simSpec)
	h := streamhttp.New(f.srv.MCP(), streamhttp.Options{Token: testToken})
	defer h.Close()
	id := initialize(t, h)
	arg := strings.Repeat("A", 3<<19)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"validate_workspace_config",`+
		`"arguments":{"workspace_root":"/%s","overrides":{"vm":{"%s":1}}}}}`, arg, arg)
	rec := post(h, strings.NewReader(body), int64(len(body)), id)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "WORKSPACE_CONFIG_INVALID") {
		t.Fatalf("%d %.300s", rec.Code, rec.Body)
	}
	if rec.Body.Len() > 64<<10 {
		t.Errorf("response of %d bytes to a %d-byte argument", rec.Body.Len(), len(arg))
	}
}

// Sessions are capped (the longest idle is ended first) and expire when
// idle; an ended session's id is refused and its state released.
func TestSessionsAreCappedAndExpire(t *testing.T) {
	f := newFixture(t, simSpec)
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o := streamhttp.Options{MaxSessions: 50, SessionIdle: time.Hour, Clock: c, Token: testToken}
	h := streamhttp.New(f.srv.MCP(), o)
	defer h.Close()
	base := f.srv.Sessions() // the fixture's in-process client
	first := initialize(t, h)
	c.Advance(time.Second)
	keep := initialize(t, h)
	for range 500 {
		c.Advance(time.Second)
		initialize(t, h)
		// keep stays active, so it is never the longest idle.
		if rec := post(h, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), -1,
			keep); rec.Code != http.StatusOK {
			t.Fatalf("ping on a live session: %d %s", rec.Code, rec.Body)
		}
	}
	if n := f.srv.Sessions() - base; n > 50 || h.Sessions() > 50 {
		t.Fatalf("%d sessions held after 502 initializations (table %d), cap 50", n, h.Sessions())
	}
	if rec := post(h, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), -1,
		first); rec.Code != http.StatusNotFound {
		t.Errorf("the evicted session answered %d", rec.Code)
	}
	if rec := post(h, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), -1,
		keep); rec.Code != http.StatusOK {
		t.Errorf("the active session was evicted: %d", rec.Code)
	}
	c.Advance(time.Hour)
	h.SweepSessions()
	// The handler's own sweeper may have woken on the same hour and be
	// releasing them still.
	for deadline := time.Now().Add(5 * time.Second); f.srv.Sessions() != base && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.srv.Sessions() - base; n != 0 || h.Sessions() != 0 {
		t.Errorf("%d sessions held (table %d) after an hour idle", n, h.Sessions())
	}
}

func TestReadSettingsHTTPLimits(t *testing.T) {
	env := map[string]string{"MCP_HTTP_MAX_BODY_BYTES": "65536", "MCP_HTTP_MAX_SESSIONS": "20",
		"MCP_HTTP_SESSION_IDLE_SECONDS": "90"}
	s, err := ReadSettings(func(k string) string { return env[k] })
	if err != nil || s.MaxBodyBytes != 65536 || s.MaxSessions != 20 || s.SessionIdle != 90*time.Second {
		t.Errorf("settings = %+v, %v", s, err)
	}
	zeroSessions := func(k string) string { return map[string]string{"MCP_HTTP_MAX_SESSIONS": "0"}[k] }
	if _, err := ReadSettings(zeroSessions); err == nil {
		t.Error("MCP_HTTP_MAX_SESSIONS=0 was accepted")
	}
}
