package testutil

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"testing"
)

// The bomb is what it says: its zlib stream inflates, checksum and all, to
// its header and then the zeros it was asked for, whatever the header says.
func TestZlibBombInflatesToWhatItWasAskedFor(t *testing.T) {
	for _, c := range []struct{ declared, inflated int }{{3<<20 + 12345, 3<<20 + 12345}, {200, 2 << 20}, {5, 17}} {
		z, err := zlib.NewReader(bytes.NewReader(ZlibBomb("commit", c.declared, c.inflated)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(z)
		want := append([]byte(fmt.Sprintf("commit %d\x00", c.declared)), make([]byte, c.inflated)...)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("declared %d, inflated %d: got %d bytes (%v), want %d", c.declared, c.inflated, len(got), err,
				len(want))
		}
	}
}
