package streamhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// testToken is the bearer token of the test transports.
const testToken = "test-token-0123456789abcdefghijklmnopqrstuv"

// authorize makes req what a local client sends: its Host is loopback and
// it carries the token.
func authorize(req *http.Request) {
	req.Host = "127.0.0.1:8765"
	req.Header.Set("Authorization", "Bearer "+testToken)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// echoServer is an MCP server with one tool, which answers with its
// argument: the transport is what is fuzzed, not sbf's tools (their HTTP
// tests are in package mcpserver), so the fuzzer's instrumented build
// leaves the engine out (~130 s of CPU on a cold cache).
func echoServer() *server.MCPServer {
	s := server.NewMCPServer("sbf-fuzz", "0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	return s
}

// FuzzHTTPHandler sends arbitrary requests (methods, headers, JSON-RPC
// bodies of any size, declared or streamed) to the transport. It must
// never panic or hang; a body over the limit is refused with 413; no
// response grows past the limit with the request; sessions stay within
// their cap.
func FuzzHTTPHandler(f *testing.F) {
	const limit, sessions = 16 << 10, 4
	h := New(echoServer(), Options{MaxBodyBytes: limit, MaxSessions: sessions, Token: testToken})
	f.Cleanup(h.Close)
	for _, body := range []string{
		initBody,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"/nope"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":[1]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"plan","arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{`,
	} {
		f.Add(uint8(0), body, uint16(0), "application/json", "", "", true)
	}
	f.Add(uint8(0), `{"a":"`, uint16(40), "application/json", "", "", false)
	f.Add(uint8(1), "", uint16(0), "", "mcp-session-x", "2025-06-18", true)
	f.Add(uint8(2), "", uint16(0), "", "mcp-session-x", "", true)
	f.Fuzz(func(t *testing.T, method uint8, body string, padKiB uint16, contentType, session, version string,
		declared bool) {
		// padKiB stretches the body past the limit without storing large
		// inputs in the corpus.
		pad := io.LimitReader(testutil.Endless('x'), int64(padKiB%512)<<10)
		payload := io.MultiReader(bytes.NewReader([]byte(body)), pad)
		size := int64(len(body)) + int64(padKiB%512)<<10
		// A GET is a stream that lasts as long as the client stays.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, []string{http.MethodPost, http.MethodGet, http.MethodDelete,
			http.MethodPut}[method%4], "/mcp", payload)
		authorize(req)
		req.ContentLength = -1
		if declared {
			req.ContentLength = size
		}
		for k, v := range map[string]string{"Content-Type": contentType, server.HeaderKeySessionID: session,
			"Mcp-Protocol-Version": version} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if req.Method == http.MethodPost && size > limit && rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a %d-byte body got %d", size, rec.Code)
		}
		if rec.Code == http.StatusRequestEntityTooLarge {
			var env struct {
				Error struct{ Data coded.Error } `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Data.Code != "REQUEST_TOO_LARGE" {
				t.Fatalf("413 without the envelope: %s", rec.Body)
			}
		}
		// The largest answer is the echo of a body within the limit.
		if rec.Body.Len() > 2*limit {
			t.Fatalf("a %d-byte request got a %d-byte response", size, rec.Body.Len())
		}
		if n := h.Sessions(); n > sessions {
			t.Fatalf("%d sessions, cap %d", n, sessions)
		}
	})
}
