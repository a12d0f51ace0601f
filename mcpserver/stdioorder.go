package mcpserver

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/clock"
)

// stdioSessionID is the one session mcp-go's stdio server holds.
const stdioSessionID = "stdio"

// stdioProgress counts the progress notifications the stdio session was
// sent and those its writer has written: mcp-go writes notifications from a
// goroutine of its own (take, marshal, write) but a call's answer directly,
// so an answer could overtake its last steps, which a client (the
// TypeScript SDK) no longer listens for once it has the answer.
type stdioProgress struct {
	counting      atomic.Bool // StdioOutput was called: written counts
	sent, written atomic.Int64
}

// progressLine is how mcp-go marshals a progress notification.
var progressLine = []byte(`{"jsonrpc":"2.0","method":"notifications/progress"`)

// StdioOutput is w for mcp-go's stdio server (sbf mcp): it counts the
// progress notifications written, so that a call with progress answers
// only after they left.
func (s *Server) StdioOutput(w io.Writer) io.Writer {
	s.stdio.counting.Store(true)
	return progressCounter{w: w, p: &s.stdio}
}

type progressCounter struct {
	w io.Writer
	p *stdioProgress
}

// Write passes b on; mcp-go writes each message in one Write.
func (c progressCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if bytes.HasPrefix(b, progressLine) {
		c.p.written.Add(1) // written, or failed: nothing more will come of it
	}
	return n, err
}

// sendProgress queues a progress notification for ctx's session, counted
// (before it is queued, so that the writer never counts it first) when the
// session is the stdio one; a notification mcp-go refused is taken back.
func (s *Server) sendProgress(ctx context.Context, params map[string]any) {
	cs := server.ClientSessionFromContext(ctx)
	stdio := cs != nil && cs.SessionID() == stdioSessionID
	if stdio {
		s.stdio.sent.Add(1)
	}
	// A client that went away is no reason to fail the call.
	if s.mcp.SendNotificationToClient(ctx, "notifications/progress", params) != nil && stdio {
		s.stdio.sent.Add(-1)
	}
}

// flushNotifications waits (at most about a second, in real time whatever
// clock the engine keeps) until the notifications queued for the call's
// session so far have left: on stdio, until the progress sent so far is
// counted as written (not what other calls send meanwhile); otherwise until
// the session's queue is taken for writing.
func (s *Server) flushNotifications(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	counted := cs.SessionID() == stdioSessionID && s.stdio.counting.Load()
	target := s.stdio.sent.Load()
	pending := func() bool { return len(cs.NotificationChannel()) > 0 }
	if counted {
		pending = func() bool { return s.stdio.written.Load() < min(target, s.stdio.sent.Load()) }
	}
	for i := 0; i < 1000 && pending(); i++ {
		select {
		case <-ctx.Done(): // the session ended: nothing more will be written
			return
		case <-clock.Real{}.After(time.Millisecond):
		}
	}
	if !counted {
		runtime.Gosched() // the writer marshals the last one taken before the answer is
	}
}
