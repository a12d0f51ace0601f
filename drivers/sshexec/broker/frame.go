package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// After the request line both sides speak in frames: a kind byte, a
// 4-byte big-endian length and that many bytes. Output travels as it
// comes, and a signal can follow stdin on the same connection.
const (
	frameStdin    = 'i' // client: stdin bytes
	frameStdinEnd = 'c' // client: stdin is at its end
	frameSignal   = 's' // client: a signal name for the command
	frameStdout   = 'o' // broker: stdout bytes
	frameStderr   = 'e' // broker: stderr bytes
	frameResult   = 'r' // broker: the response JSON, last
)

// maxFrame bounds a frame a peer may announce; output is sent in pieces
// no larger than the reads that produced it.
const maxFrame = 16 << 20

// frameWriter sends frames; the command's two streams write concurrently.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) send(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var head [5]byte
	head[0] = kind
	binary.BigEndian.PutUint32(head[1:], uint32(len(p)))
	if _, err := f.w.Write(head[:]); err != nil {
		return err
	}
	_, err := f.w.Write(p)
	return err
}

// stream is an io.Writer sending each write as one frame of a kind.
type stream struct {
	f    *frameWriter
	kind byte
}

func (s stream) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), maxFrame)
		if err := s.f.send(s.kind, rest[:n]); err != nil {
			return len(p) - len(rest), err
		}
		rest = rest[n:]
	}
	return len(p), nil
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("a %d-byte frame is over the %d-byte limit", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return head[0], p, nil
}
