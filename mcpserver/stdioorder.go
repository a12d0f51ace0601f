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

// sentProgress notes one progress notification queued for cs.
func (s *Server) sentProgress(cs server.ClientSession) {
	if cs != nil && cs.SessionID() == stdioSessionID {
		s.stdio.sent.Add(1)
	}
}

// flushNotifications waits (at most about a second, in real time whatever
// clock the engine keeps) until what was queued for the call's session was
// written: on stdio, every progress notification sent (counted); otherwise
// until the session's queue is taken for writing.
func (s *Server) flushNotifications(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	pending := func() bool { return len(cs.NotificationChannel()) > 0 }
	if cs.SessionID() == stdioSessionID && s.stdio.counting.Load() {
		pending = func() bool { return s.stdio.written.Load() < s.stdio.sent.Load() }
	}
	for i := 0; i < 1000 && pending(); i++ {
		<-clock.Real{}.After(time.Millisecond)
	}
	runtime.Gosched() // the writer marshals the last one taken before the answer is
}
