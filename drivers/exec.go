package drivers

import (
	"io"
	"strings"
	"sync"
	"time"
)

// ExecRequest is a command to run inside an instance.
type ExecRequest struct {
	Command   string        // run by /bin/sh -c in the guest
	Stdin     io.Reader     // nil: empty
	Timeout   time.Duration // zero: none; the remote command is killed when it passes
	MaxOutput int           // bytes kept per stream; zero: DefaultMaxOutput
	// StdoutTo and StderrTo, when set, also receive the output as it
	// comes (sbf exec streams it); the result keeps the capped copy.
	StdoutTo io.Writer
	StderrTo io.Writer
	// Signals, when set, carries signals for the running command; the
	// backend delivers each to every process the command started, as a
	// terminal's Ctrl-C reaches its foreground job. It is not closed by
	// the backend.
	Signals <-chan Signal
	// Workdir and Env, when set, are applied by the engine before the
	// command (cd, export); backends never see them.
	Workdir string
	Env     map[string]string
}

// Signal names a POSIX signal without its SIG prefix: "INT", "TERM".
type Signal string

// Forwarded are the signals sbf passes on to a command it runs.
var Forwarded = []Signal{"INT", "TERM", "HUP", "QUIT"}

// Outputs are the writers a backend gives a command: each keeps a capped
// copy for the result and passes everything on to StdoutTo or StderrTo.
func (r ExecRequest) Outputs() (stdout, stderr *CappedBuffer, toStdout, toStderr io.Writer) {
	stdout, stderr = NewCappedBuffer(r.MaxOutput), NewCappedBuffer(r.MaxOutput)
	return stdout, stderr, tee(stdout, r.StdoutTo), tee(stderr, r.StderrTo)
}

func tee(kept, also io.Writer) io.Writer {
	if also == nil {
		return kept
	}
	return io.MultiWriter(kept, also)
}

// DefaultMaxOutput is how much of each output stream Exec keeps.
const DefaultMaxOutput = 1 << 20

// ExecResult is what a command did. Output beyond MaxOutput is dropped;
// the *Bytes fields count everything the command wrote.
type ExecResult struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StderrBytes     int64  `json:"stderr_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	TimedOut        bool   `json:"timed_out"`
	// MaxOutput is how many bytes of each stream were kept at most: what
	// the request asked, lowered to the server's ceiling (set by the data
	// plane, not by backends).
	MaxOutput  int           `json:"max_output_bytes,omitempty"`
	Duration   time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
	Via        string        `json:"via"` // how it ran: "ssh" or a fallback
}

// CappedBuffer keeps the first max bytes written and counts the rest. It
// is safe for concurrent use: a command abandoned at its deadline may
// still be writing while its result is read. What it keeps lives in
// chunks that grow with it and are never copied, so a stream costs the
// bytes kept (and their copy in String), whatever the command prints.
type CappedBuffer struct {
	mu     sync.Mutex
	max    int
	chunks [][]byte
	kept   int
	total  int64
}

// NewCappedBuffer keeps at most max bytes (DefaultMaxOutput when max ≤ 0).
func NewCappedBuffer(max int) *CappedBuffer {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	return &CappedBuffer{max: max}
}

// Chunk sizes: each new chunk is as large as what is kept so far, within
// these bounds, so small outputs stay small and large ones need few.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

func (c *CappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	p = p[:min(len(p), c.max-c.kept)]
	for len(p) > 0 {
		last := len(c.chunks) - 1
		if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
			size := min(c.max-c.kept, max(firstChunk, min(c.kept, maxChunk)))
			c.chunks = append(c.chunks, make([]byte, 0, size))
			last++
		}
		chunk := c.chunks[last]
		copied := copy(chunk[len(chunk):cap(chunk)], p)
		c.chunks[last] = chunk[:len(chunk)+copied]
		c.kept += copied
		p = p[copied:]
	}
	return n, nil
}

// String is what was kept.
func (c *CappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	b.Grow(c.kept)
	for _, chunk := range c.chunks {
		b.Write(chunk)
	}
	return b.String()
}

// Total is how many bytes were written.
func (c *CappedBuffer) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Truncated reports whether anything written was dropped.
func (c *CappedBuffer) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(c.kept)
}
