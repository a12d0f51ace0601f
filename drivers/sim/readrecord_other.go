//go:build !unix

package sim

import (
	"errors"
	"io"
	"os"
	"slices"
)

// readRecord reads a record file as os.ReadFile does, in fewer calls when
// it fits buf (nil: a new one); readrecord_unix.go says why it matters.
func readRecord(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(buf) == 0 {
		buf = make([]byte, recordBytes)
	}
	n, err := f.Read(buf)
	if errors.Is(err, io.EOF) || err == nil && n < len(buf) {
		return buf[:n], nil
	} else if err != nil {
		return nil, err
	}
	rest, err := io.ReadAll(f) // a record larger than any sbf writes: read on
	return append(slices.Clone(buf), rest...), err
}
