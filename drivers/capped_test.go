package drivers

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// A capped buffer keeps exactly the first max bytes, in order, however
// the writes are cut, counts everything, and holds what it keeps in
// chunks it never copies (so its cost is what it keeps, and one chunk).
func TestCappedBufferKeepsTheHeadAndCountsTheRest(t *testing.T) {
	var want bytes.Buffer
	for i := 0; want.Len() < 3<<20; i++ {
		want.WriteString(strings.Repeat(string(rune('a'+i%26)), 1+i%9000))
	}
	for _, limit := range []int{1, 4095, 4096, 4097, 1 << 20, 2<<20 + 17, 8 << 20} {
		c := NewCappedBuffer(limit)
		src := want.Bytes()
		for n := 1; len(src) > 0; n = n*7%65521 + 1 {
			k := min(n, len(src))
			if w, err := c.Write(src[:k]); w != k || err != nil {
				t.Fatalf("write %d: %d %v", k, w, err)
			}
			src = src[k:]
		}
		kept := min(limit, want.Len())
		if got := c.String(); got != want.String()[:kept] || c.Total() != int64(want.Len()) ||
			c.Truncated() != (kept < want.Len()) {
			t.Errorf("limit %d: kept %d bytes (want %d), total %d, truncated %v", limit, len(got), kept, c.Total(),
				c.Truncated())
		}
		held := 0
		for _, chunk := range c.chunks {
			held += cap(chunk)
		}
		if held > kept+max(firstChunk, min(kept, maxChunk)) { // at most one chunk not yet full
			t.Errorf("limit %d: holds %d bytes for %d kept", limit, held, kept)
		}
	}
}

// Writers from several goroutines (a command abandoned at its deadline
// still writing) never pass the cap.
func TestCappedBufferIsSafeForConcurrentWriters(t *testing.T) {
	c := NewCappedBuffer(10_000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Write([]byte("0123456789"))
				_ = c.Truncated()
			}
		}()
	}
	wg.Wait()
	if len(c.String()) != 10_000 || c.Total() != 80_000 {
		t.Errorf("kept %d of %d", len(c.String()), c.Total())
	}
}
