package egress

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// activity is when a connection last moved a byte either way, so one idle
// watchdog covers both directions: a long download with a silent upload
// side is not idle.
type activity struct {
	clk  clock.Clock
	last atomic.Int64 // UnixNano on clk
}

func newActivity(clk clock.Clock) *activity {
	a := &activity{clk: clk}
	a.touch()
	return a
}

func (a *activity) touch() { a.last.Store(a.clk.Now().UnixNano()) }

// watch calls onIdle once nothing moved for idle, or returns when ctx ends.
func (a *activity) watch(ctx context.Context, idle time.Duration, onIdle func()) {
	for {
		wait := time.Unix(0, a.last.Load()).Add(idle).Sub(a.clk.Now())
		if wait <= 0 {
			onIdle()
			return
		}
		t := a.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// meter counts the bytes written through it and marks activity.
type meter struct {
	w   io.Writer
	n   atomic.Int64
	act *activity
}

func (m *meter) Write(b []byte) (int, error) {
	n, err := m.w.Write(b)
	m.n.Add(int64(n))
	m.act.touch()
	return n, err
}

// copyBufSize is how much the proxy moves in one write.
const copyBufSize = 32 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// pump copies src to dst through a pooled buffer (bounded memory per
// connection whatever the peers do).
func pump(dst io.Writer, src io.Reader) error {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// Hiding WriterTo keeps io.CopyBuffer on this buffer (a *bufio.Reader
	// would copy through its own 4 KiB one).
	_, err := io.CopyBuffer(dst, struct{ io.Reader }{src}, *buf)
	return err
}

// closeWrite half-closes c when it can, so the peer sees EOF while the
// other direction goes on; else it closes c.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
