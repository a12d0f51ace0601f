package sandbox

import (
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
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/spec"
)

// The history is a workspace's audit trail: one JSON line per command or
// tool call that acted on one of its sandboxes, from either door, and per
// removal a backend saw done without sbf (a cluster's expiry), in
// .sandboxforge/history.jsonl. It is bounded: past MaxHistoryBytes the
// file becomes history.jsonl.1 (replacing the one before), so at most
// twice that is kept. What a line quotes (a command, a path, an error) is
// redacted as every other output is, and cut to a bounded length. The
// files are sbf's own (package ownfile): never written or read through a
// link, and read within a bound.

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
	Door       string    `json:"door"` // cli, mcp, or cluster (what a backend saw done without sbf)
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

// own is the history's folder as sbf's own: the workspace above it as
// named, the folder and its files never links.
func (h History) own() ownfile.Folder { return ownfile.In(filepath.Dir(h.Dir), filepath.Base(h.Dir)) }

func (h History) limit() int64 {
	if h.Max <= 0 {
		return MaxHistoryBytes
	}
	return h.Max
}

// maxRead bounds a read of one history file: a file rotates once it
// reaches the limit, so it holds the limit and the few lines appended while
// it was due (appendUnlocked); a read keeps to the newest maxRead bytes.
func (h History) maxRead() int64 { return h.limit() + 64<<10 }

// Append writes one event, redacted by redact (CLI and MCP server may
// append at once: appendUnlocked). A workspace without sbf's folder has
// nothing to record (no sandbox ever ran there).
func (h History) Append(ctx context.Context, ev Event, redact func(string) string) error {
	_, err := h.AppendOnce(ctx, ev, redact, nil, 0)
	return err
}

// AppendOnce writes ev as Append does unless the history already holds a
// line same says is it (something seen by many runs, recorded by the
// first: a cluster's expiry). It looks under the lock, from the newest
// line back to the first that ended more than window before ev.Time: a
// line written after ev's was ended after ev happened. A nil same always
// writes. It says whether it wrote.
func (h History) AppendOnce(ctx context.Context, ev Event, redact func(string) string, same func(Event) bool,
	window time.Duration) (bool, error) {
	if redact != nil {
		ev.Command, ev.Path, ev.Detail, ev.Error = redact(ev.Command), redact(ev.Path), redact(ev.Detail),
			redact(ev.Error)
	}
	ev.Command, ev.Path = clipField(ev.Command), clipField(ev.Path)
	ev.Detail, ev.Error = clipField(ev.Detail), clipField(ev.Error)
	line, err := json.Marshal(ev)
	if err != nil {
		return false, err
	}
	line = append(line, '\n')
	if same == nil {
		if wrote, locked, err := h.appendUnlocked(line); !locked {
			return wrote, err
		}
	}
	own := h.own()
	if ok, err := own.Exists(); !ok {
		return false, err
	}
	// A run the caller cancelled is recorded all the same: the wait for the
	// lock is bounded by historyLockWait, not by the caller's end.
	lock, err := flock.Acquire(context.WithoutCancel(ctx), own.File(HistoryFile+".lock"),
		flock.Holder{Command: "sbf history", PID: os.Getpid()}, historyLockWait)
	if err != nil {
		return false, fmt.Errorf("recording %s in the history: %w", ev.Tool, err)
	}
	defer lock.Release()
	if same != nil {
		if held, err := h.holds(same, ev.Time.Add(-window)); held || err != nil {
			return false, err
		}
	}
	if err := h.rotate(); err != nil {
		return false, err
	}
	f, err := own.OpenFile(HistoryFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("opening the history: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return false, fmt.Errorf("writing the history: %w", err)
	}
	return true, f.Close()
}

// appendUnlocked writes line without the history's lock unless the file is
// due to rotate (then it writes nothing and says locked: the caller rotates
// under the lock). The lock serialises rotations, not appends: one write
// of one line to a file opened O_APPEND lands whole after the others, and
// a line written to the file a rotation renamed meanwhile is kept in the
// rotated file. A reader reads the newest maxRead bytes of a file, so the
// lines racing past the bound are read as well. An append costs one open
// then, not a lock's note written and cleared (a third of an MCP call's
// own time).
func (h History) appendUnlocked(line []byte) (wrote, locked bool, err error) {
	f, err := h.own().OpenFile(HistoryFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // no state folder: no sandbox ever ran here
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("opening the history: %w", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() >= h.limit() {
		f.Close()
		return false, true, nil
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return false, false, fmt.Errorf("writing the history: %w", err)
	}
	return true, false, f.Close()
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
	st, err := h.own().Stat(HistoryFile)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() < h.limit()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	if err := h.own().Rename(HistoryFile, HistoryFile+".1"); err != nil {
		return fmt.Errorf("rotating the history: %w", err)
	}
	return nil
}
