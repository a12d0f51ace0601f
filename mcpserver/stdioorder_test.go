package mcpserver

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A call's answer waits until the progress it sent to the stdio session
// was written, not only taken from the queue: mcp-go's writer takes a
// notification, marshals it, then writes it, while the answer is written
// directly. Here the queue is empty and the writer writes 50 ms later.
func TestAStdioAnswerWaitsForItsProgressToBeWritten(t *testing.T) {
	f := newFixture(t, simSpec)
	var out bytes.Buffer
	w := f.srv.StdioOutput(&out)
	stdio := &caller{id: stdioSessionID, notes: make(chan mcp.JSONRPCNotification, 1)}
	ctx := f.srv.mcp.WithContext(context.Background(), stdio)
	f.srv.sentProgress(stdio)
	var written atomic.Bool
	go func() {
		time.Sleep(50 * time.Millisecond)
		w.Write(append(progressLine, []byte(`,"params":{"progress":1}}`+"\n")...))
		written.Store(true)
	}()
	f.srv.flushNotifications(ctx)
	if !written.Load() {
		t.Fatal("the answer would have left before the progress it follows")
	}
	// Another session's progress is not the stdio writer's to wait for.
	other := &caller{id: "http-1", notes: make(chan mcp.JSONRPCNotification, 1)}
	f.srv.sentProgress(other)
	if f.srv.stdio.sent.Load() != 1 {
		t.Errorf("an HTTP session's progress was counted as the stdio writer's: %d", f.srv.stdio.sent.Load())
	}
}
