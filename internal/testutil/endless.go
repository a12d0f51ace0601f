package testutil

// Endless yields its byte forever: a body, a stream or guest output of any
// size (behind io.LimitReader) that no test stores.
type Endless byte

func (e Endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}
