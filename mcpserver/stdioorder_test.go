package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A call's answer waits until the progress it sent to the stdio session
// was written, not only taken from the queue: mcp-go's writer takes a
// notification, marshals it, then writes it, while the answer is written
// directly. Here the queue is empty and the writer writes 50 ms later.
func TestAStdioAnswerWaitsForItsProgressToBeWritten(t *testing.T) {
	f := newFixture(t, simSpec)
	// The line counts as written when the writer beneath has it, which is
	// before the counter counts it (a flag set after w.Write returned could
	// still be unset when the flush, woken by the count, looks).
	var written atomic.Bool
	w := f.srv.StdioOutput(flagWriter{&written})
	stdio := &caller{id: stdioSessionID, notes: make(chan mcp.JSONRPCNotification, 1)}
	ctx := f.srv.mcp.WithContext(context.Background(), stdio)
	f.srv.stdio.sent.Add(1) // as sendProgress counts what it queues for stdio
	go func() {
		time.Sleep(50 * time.Millisecond)
		w.Write(append(progressLine, []byte(`,"params":{"progress":1}}`+"\n")...))
	}()
	f.srv.flushNotifications(ctx)
	if !written.Load() {
		t.Fatal("the answer would have left before the progress it follows")
	}
	// Another session's progress is not the stdio writer's to wait for.
	other := &caller{id: "http-1", notes: make(chan mcp.JSONRPCNotification, 1)}
	f.srv.sendProgress(f.srv.mcp.WithContext(context.Background(), other), map[string]any{"progress": 1})
	if f.srv.stdio.sent.Load() != 1 {
		t.Errorf("an HTTP session's progress was counted as the stdio writer's: %d", f.srv.stdio.sent.Load())
	}
}

// flagWriter notes that something was written.
type flagWriter struct{ written *atomic.Bool }

func (f flagWriter) Write(b []byte) (int, error) {
	f.written.Store(true)
	return len(b), nil
}

// Through mcp-go's own stdio server, over pipes: a create's progress lines
// come before its answer, and every one sent was counted as written (the
// prefix StdioOutput looks for is what mcp-go writes: were it not, each
// call with progress would wait out its second).
func TestStdioProgressIsCountedAsMcpGoWritesIt(t *testing.T) {
	f := newFixture(t, simSpec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go server.NewStdioServer(f.srv.MCP()).Listen(ctx, inR, f.srv.StdioOutput(outW))
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "create_instance", "_meta": map[string]any{"progressToken": "p1"},
			"arguments": map[string]any{"workspace_root": f.root, "auto_bootstrap": false}}})
	go fmt.Fprintf(inW, "%s\n%s\n%s\n", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, call)
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	progress := 0
	for lines.Scan() {
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, lines.Text())
		}
		if m.Method == "notifications/progress" {
			progress++
		}
		if m.ID == float64(2) {
			break
		}
	}
	if progress == 0 || f.srv.stdio.sent.Load() != int64(progress) || f.srv.stdio.written.Load() != int64(progress) {
		t.Errorf("%d progress lines before the answer; sent %d, counted as written %d", progress,
			f.srv.stdio.sent.Load(), f.srv.stdio.written.Load())
	}
}
