package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/spec"
)

// The history is a workspace's audit trail: one JSON line per command or
// tool call that acted on one of its sandboxes, from either door, in
// .sandboxforge/history.jsonl. It is bounded: past MaxHistoryBytes the
// file becomes history.jsonl.1 (replacing the one before), so at most
// twice that is kept. What a line quotes (a command, a path, an error) is
// redacted as every other output is, and cut to a bounded length.

// History files and bounds.
const (
	HistoryFile     = "history.jsonl"
	MaxHistoryBytes = 4 << 20
	maxQuotedField  = 2 << 10
	historyLockWait = 10 * time.Second
)

// Event is one line of the history.
type Event struct {
	Time       time.Time `json:"time"`
	Door       string    `json:"door"` // cli or mcp
	Tool       string    `json:"tool"` // an MCP tool, or the sbf command (exec, cp, cat, …)
	Sandbox    string    `json:"sandbox"`
	InstanceID string    `json:"instance_id,omitempty"`
	Command    string    `json:"command,omitempty"` // what ran, for commands
	Path       string    `json:"path,omitempty"`    // what was read or written, for files
	Detail     string    `json:"detail,omitempty"`  // anything else the call named (ports, a copy's other side)
	ExitCode   *int      `json:"exit_code,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	Bytes      int64     `json:"bytes,omitempty"` // output, read, written or sent
	ErrorCode  string    `json:"error_code,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// History is one workspace's audit trail.
type History struct {
	Dir string // the workspace's .sandboxforge folder
	Max int64  // bytes before rotation (MaxHistoryBytes when zero)
}

// WorkspaceHistory is the history of the workspace at root.
func WorkspaceHistory(root string) History { return History{Dir: filepath.Join(root, spec.Dir)} }

func (h History) path() string { return filepath.Join(h.Dir, HistoryFile) }

// Append writes one event, redacted by redact, under the history's lock
// (CLI and MCP server may append at once). A workspace without sbf's
// folder has nothing to record (no sandbox ever ran there).
func (h History) Append(ev Event, redact func(string) string) error {
	if _, err := os.Stat(h.Dir); err != nil {
		return nil
	}
	if redact != nil {
		ev.Command, ev.Path, ev.Detail, ev.Error = redact(ev.Command), redact(ev.Path), redact(ev.Detail),
			redact(ev.Error)
	}
	ev.Command, ev.Path = clipField(ev.Command), clipField(ev.Path)
	ev.Detail, ev.Error = clipField(ev.Detail), clipField(ev.Error)
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	lock, err := flock.Acquire(context.Background(), h.path()+".lock",
		flock.Holder{Command: "sbf history", PID: os.Getpid()}, historyLockWait)
	if err != nil {
		return fmt.Errorf("recording %s in the history: %w", ev.Tool, err)
	}
	defer lock.Release()
	if err := h.rotate(); err != nil {
		return err
	}
	f, err := os.OpenFile(h.path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the history: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing the history: %w", err)
	}
	return f.Close()
}

func clipField(s string) string {
	if len(s) <= maxQuotedField {
		return s
	}
	cut := maxQuotedField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// rotate moves a full history aside; the caller holds the lock.
func (h History) rotate() error {
	limit := h.Max
	if limit <= 0 {
		limit = MaxHistoryBytes
	}
	st, err := os.Lstat(h.path())
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() < limit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	if err := os.Rename(h.path(), h.path()+".1"); err != nil {
		return fmt.Errorf("rotating the history: %w", err)
	}
	return nil
}

// Read returns the newest limit events that keep says to (all when keep
// is nil; all of them when limit ≤ 0), oldest first. Lines that do not
// parse are skipped.
func (h History) Read(keep func(Event) bool, limit int) ([]Event, error) {
	var out []Event
	for _, p := range []string{h.path() + ".1", h.path()} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the history: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && (keep == nil || keep(ev)) {
				out = append(out, ev)
			}
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}
