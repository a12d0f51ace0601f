package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// Decisions written to the log.
const (
	Allowed = "allowed"
	Denied  = "denied"
	// Failed is a destination the policy allowed that was not reached (its
	// name did not resolve, no address answered): nothing crossed.
	Failed = "failed"
)

// DefaultLogMaxBytes is the size at which the log is rotated: the current
// file becomes PATH.1 (replacing the older one) and a new file starts, so a
// sandbox's log never takes more than about twice this.
const DefaultLogMaxBytes = 1 << 20

// maxLogField bounds the guest-chosen strings (host, reason) in a log line.
const maxLogField = 300

// Entry is one decision: a CONNECT tunnel or one plain HTTP request.
type Entry struct {
	Time     time.Time `json:"time"`
	Sandbox  string    `json:"sandbox"`
	Decision string    `json:"decision"`
	Method   string    `json:"method"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	// Addr is the address dialled (or refused), "" before resolution.
	Addr      string `json:"addr"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	Reason    string `json:"reason"`
}

// Log appends entries as JSON lines to a file, rotating it at a size bound.
// One process writes a sandbox's log; readers use ReadLog.
type Log struct {
	path     string
	maxBytes int64
	mu       sync.Mutex
	f        *os.File
	size     int64
}

// OpenLog opens (creating, mode 0600) the log at path. maxBytes <= 0 means
// DefaultLogMaxBytes.
func OpenLog(path string, maxBytes int64) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultLogMaxBytes
	}
	l := &Log{path: path, maxBytes: maxBytes}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening egress log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening egress log: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends one entry, rotating first when it would pass the bound.
func (l *Log) Write(e Entry) error {
	e.Host = clip(e.Host)
	e.Reason = clip(e.Reason)
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding egress log entry: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("egress log is closed")
	}
	if l.size > 0 && l.size+int64(len(line)) > l.maxBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing egress log: %w", err)
	}
	return nil
}

func (l *Log) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("rotating egress log: %w", err)
	}
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("rotating egress log: %w", err)
	}
	return l.open()
}

// Close closes the file; later writes fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func clip(s string) string {
	if len(s) <= maxLogField {
		return s
	}
	return s[:maxLogField] + "…"
}

// ReadLog returns the last tail entries (all when tail <= 0) of the log at
// path and its rotated PATH.1, oldest first. A missing log is empty. Lines
// that do not parse (a line cut by a crash, or one being written) are
// skipped.
func ReadLog(path string, tail int) ([]Entry, error) {
	var out []Entry
	for _, p := range []string{path + ".1", path} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading egress log: %w", err)
		}
		out = appendEntries(out, data)
	}
	if tail > 0 && len(out) > tail {
		out = out[len(out)-tail:]
	}
	return out, nil
}

func appendEntries(out []Entry, data []byte) []Entry {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}
