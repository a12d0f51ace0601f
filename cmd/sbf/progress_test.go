package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProgressHeartbeatDuringLongActions(t *testing.T) {
	var out syncBuffer
	p := newProgress(&out, 20*time.Millisecond)
	p.event(reconcile.Event{Sandbox: "api", Kind: reconcile.Create})
	time.Sleep(70 * time.Millisecond)
	p.event(reconcile.Event{Sandbox: "api", Kind: reconcile.Create, Done: true, Elapsed: 70 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	text := out.String()
	beats := strings.Count(text, "api: create still running")
	if !strings.HasPrefix(text, "api: create...\n") || beats < 2 || !strings.HasSuffix(text, "api: create done (70ms)\n") {
		t.Errorf("progress output:\n%s", text)
	}
	if after := strings.Count(out.String(), "still running"); after != beats {
		t.Error("heartbeats continued after the action ended")
	}
}
