package sshexec

import (
	"io"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// A marked stream passes output on and returns what follows the marker;
// a guest that writes the marker and then never ends its line gets an
// error, not a host buffer growing with its output.
func TestMarkedStreamBoundsTheMarkerLine(t *testing.T) {
	m := newMarkedStream(strings.NewReader("out\nput TOKEN-1 0\nnext"))
	out := drivers.NewCappedBuffer(64)
	rest, err := m.readUntil("TOKEN-1", out)
	if err != nil || rest != "0" || out.String() != "out\nput " {
		t.Fatalf("rest %q, out %q, %v", rest, out.String(), err)
	}
	m = newMarkedStream(io.MultiReader(strings.NewReader("TOKEN-2"), io.LimitReader(testutil.Endless('x'), 64<<20)))
	if _, err := m.readUntil("TOKEN-2", io.Discard); err == nil || !strings.Contains(err.Error(), "marker line") {
		t.Fatalf("an endless marker line: %v", err)
	}
	if cap(m.buf) > 1<<20 {
		t.Errorf("the stream held %d bytes", cap(m.buf))
	}
}
