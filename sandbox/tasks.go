package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/shellquote"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/state"
)

// Task errors, in SandboxForge v1's vocabulary.
const (
	CodeTaskNotFound        = "TASK_NOT_FOUND"
	CodeTaskAlreadyFinished = "TASK_ALREADY_FINISHED"
)

// taskControl bounds the small commands that start, probe and stop tasks.
const taskControl = 30 * time.Second

// Tasks runs and tracks one workspace's background tasks: processes
// detached in guests, recorded in the workspace's state so they outlive
// the sbf process that started them.
type Tasks struct {
	// Target finds a sandbox the engine admits; an error means its tasks
	// went with it.
	Target func(sandbox string) (*Target, error)
	Store  TaskStore
	Clock  clock.Clock
}

// TaskStore is where tasks are recorded (the engine: the workspace's
// state file, edited under its lock).
type TaskStore interface {
	// ReadTasks reads the recorded tasks without waiting for the lock.
	ReadTasks() (map[string]*state.Task, error)
	SaveTask(ctx context.Context, t *state.Task) error
}

// Start runs a command detached in a sandbox's guest, in its own
// session and process group, with its output and exit code in files
// there, and records it in the workspace's state.
func (ts *Tasks) Start(ctx context.Context, sandbox, command, cwd string, env map[string]string) (*state.Task, error) {
	tgt, err := ts.Target(sandbox)
	if err != nil {
		return nil, err
	}
	id := newTaskID()
	script, err := startScript(id, command, cwd, env)
	if err != nil {
		return nil, err
	}
	res, err := tgt.Exec(ctx, drivers.ExecRequest{Command: script, Timeout: taskControl})
	if err != nil {
		return nil, fmt.Errorf("starting task %s in %s: %w", id, sandbox, err)
	}
	lines := strings.Fields(res.Stdout)
	if res.ExitCode != 0 || len(lines) != 2 {
		return nil, coded.New(coded.BackendCommand, map[string]any{"exit_code": res.ExitCode, "stderr": res.Stderr},
			"starting task %s in %s failed: %s", id, sandbox, strings.TrimSpace(res.Stderr))
	}
	pid, _ := strconv.Atoi(lines[0])
	now := ts.Clock.Now().UTC()
	t := &state.Task{ID: id, Sandbox: sandbox, Instance: tgt.Instance, Command: command, Cwd: cwd, Status: "running",
		PID: pid, CreatedAt: now, StartedAt: &now,
		LogPath: lines[1] + "/" + id + ".log", ExitPath: lines[1] + "/" + id + ".exit"}
	return t, ts.Store.SaveTask(ctx, t)
}

// startScript starts the command under setsid (a new session: its own
// process group, which stop signals as a whole), detached from sbf's
// connection, writing its exit code when it ends. The cd into cwd and the
// exports are the task's own first steps, as in v1: a cwd that does not
// exist is a task that fails (cd's status, its message in the log), not a
// start that fails.
func startScript(id, command, cwd string, env map[string]string) (string, error) {
	wrapped, err := withPrelude(drivers.ExecRequest{Command: command, Workdir: cwd, Env: env})
	if err != nil {
		return "", err
	}
	return `d="$HOME/.sbf/tasks"; mkdir -p "$d" || exit 1
setsid sh -c 'sh -c "$1"; echo $? > "$2"' sbf-task ` + shellquote.Quote(wrapped.Command) + ` "$d/` + id +
		`.exit" > "$d/` + id + `.log" 2>&1 < /dev/null &
echo "$!"; echo "$d"`, nil
}

// taskIDPrefix starts every task id; a prefix given without it still finds the task (Resolve).
const taskIDPrefix = "task_"

func newTaskID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return taskIDPrefix + hex.EncodeToString(b)
}

// Get finds a task in the workspace's state, its status brought up to
// date from the guest when it was running.
func (ts *Tasks) Get(ctx context.Context, id string) (*state.Task, error) {
	t, err := ts.find(id)
	if err != nil || t.Finished() {
		return t, err
	}
	if err := ts.refresh(ctx, t); err != nil {
		return t, err
	}
	return t, ts.Store.SaveTask(ctx, t)
}

// Logs returns the last tail lines of a task's output (all with
// tail ≤ 0). Once its sandbox has ended, that is the output saved then
// (Task.SavedOutput says so).
func (ts *Tasks) Logs(ctx context.Context, id string, tail int) (*state.Task, string, error) {
	t, err := ts.Get(ctx, id)
	if err != nil {
		return t, "", err
	}
	tgt, err := ts.Target(t.Sandbox)
	if err == nil && tgt.Instance != t.Instance {
		err = fmt.Errorf("sandbox %s runs another VM (%s) than the task's (%s)", t.Sandbox, tgt.Instance, t.Instance)
	}
	switch {
	case err != nil && t.SavedOutput != nil:
		return t, lastLines(t.SavedOutput.Text, tail), nil
	case err != nil:
		return t, "", fmt.Errorf("reading the output of task %s: its sandbox has ended and no output was saved: %w",
			id, err)
	}
	cmd := "cat " + shellquote.Quote(t.LogPath)
	if tail > 0 {
		cmd = "tail -n " + strconv.Itoa(tail) + " " + shellquote.Quote(t.LogPath)
	}
	res, err := tgt.Exec(ctx, drivers.ExecRequest{Command: cmd, Timeout: taskControl})
	if err != nil {
		return t, "", err
	}
	return t, res.Stdout, nil
}

// Stop signals the task's whole process group: TERM, or KILL when
// forced (v1's exit codes -15 and -9).
func (ts *Tasks) Stop(ctx context.Context, id string, force bool) (*state.Task, error) {
	t, err := ts.Get(ctx, id)
	if err != nil {
		return t, err
	}
	if t.Finished() {
		return t, coded.New(CodeTaskAlreadyFinished, map[string]any{"task_id": id, "status": t.Status},
			"task %s already finished (%s)", id, t.Status)
	}
	tgt, err := ts.Target(t.Sandbox)
	if err != nil {
		return t, err
	}
	sig, code := "TERM", -15
	if force {
		sig, code = "KILL", -9
	}
	kill := drivers.ExecRequest{Command: fmt.Sprintf("kill -%s -%d", sig, t.PID), Timeout: taskControl}
	if _, err := tgt.Exec(ctx, kill); err != nil {
		return t, fmt.Errorf("stopping task %s: %w", id, err)
	}
	now := ts.Clock.Now().UTC()
	t.Status, t.ExitCode, t.FinishedAt = "stopped", &code, &now
	return t, ts.Store.SaveTask(ctx, t)
}

// List is the workspace's tasks as recorded.
func (ts *Tasks) List() ([]*state.Task, error) {
	tasks, err := ts.Store.ReadTasks()
	if err != nil {
		return nil, err
	}
	var out []*state.Task
	for _, t := range tasks {
		out = append(out, t)
	}
	return out, nil
}

// refresh reads the task's exit file and whether its process lives.
func (ts *Tasks) refresh(ctx context.Context, t *state.Task) error {
	now := ts.Clock.Now().UTC()
	tgt, err := ts.Target(t.Sandbox)
	if err != nil {
		// The sandbox is gone: its tasks went with it.
		t.Status, t.FinishedAt, t.ErrorMessage = "stopped", &now, "the sandbox is no longer running: "+err.Error()
		return nil
	}
	res, err := tgt.Exec(
		ctx,
		// An exit file the task is writing this very moment is empty: "none" too.
		drivers.ExecRequest{Command: "c=$(cat " + shellquote.Quote(t.ExitPath) +
			" 2>/dev/null); echo \"${c:-none}\"; " +
			fmt.Sprintf("kill -0 %d 2>/dev/null && echo alive || echo dead", t.PID), Timeout: taskControl},
	)
	if err != nil {
		return fmt.Errorf("checking task %s: %w", t.ID, err)
	}
	fields := strings.Fields(res.Stdout)
	if len(fields) != 2 {
		return fmt.Errorf("checking task %s: unexpected answer %q", t.ID, res.Stdout)
	}
	switch code, err := strconv.Atoi(fields[0]); {
	case err == nil:
		t.ExitCode, t.FinishedAt, t.Status = &code, &now, "succeeded"
		if code != 0 {
			t.Status = "failed"
		}
	case fields[1] == "dead":
		t.Status, t.FinishedAt, t.ErrorMessage = "failed", &now, "Task process exited without an exit marker"
	}
	return nil
}

// Resolve is the task a person means by id or by a unique beginning of
// it (as git takes a short commit id): an exact id wins; a beginning two
// tasks share is refused with both, and one no task has says where the
// ids are listed.
func (ts *Tasks) Resolve(idOrPrefix string) (string, error) {
	tasks, err := ts.Store.ReadTasks()
	if err != nil {
		return "", err
	}
	if _, ok := tasks[idOrPrefix]; ok || idOrPrefix == "" {
		return idOrPrefix, nil
	}
	var matches []string
	for id := range tasks {
		// As docker's ids: the start of the id, with or without its prefix.
		if strings.HasPrefix(id, idOrPrefix) || strings.HasPrefix(strings.TrimPrefix(id, taskIDPrefix), idOrPrefix) {
			matches = append(matches, id)
		}
	}
	slices.Sort(matches)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", coded.New(CodeTaskNotFound, map[string]any{"task_id": idOrPrefix},
			"Task '%s' was not found; run 'sbf task list' for this workspace's tasks", idOrPrefix)
	}
	return "", coded.New(coded.InvalidArguments, map[string]any{"task_id": idOrPrefix, "matches": matches},
		"task id %s is the beginning of %d tasks' ids (%s); give more of it", idOrPrefix, len(matches),
		strings.Join(matches, ", "))
}

func (ts *Tasks) find(id string) (*state.Task, error) {
	tasks, err := ts.Store.ReadTasks()
	if err != nil {
		return nil, err
	}
	t, ok := tasks[id]
	if !ok {
		return nil, coded.New(CodeTaskNotFound, map[string]any{"task_id": id}, "Task '%s' was not found", id)
	}
	return t, nil
}

// SaveOutput reads the end of a task's output in its guest, before the
// guest goes (destroy, expiry): `task logs` shows it once the sandbox has
// ended. At most state.MaxSavedOutput bytes are kept.
func SaveOutput(
	ctx context.Context,
	exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error),
	t *state.Task,
	why string,
	now time.Time,
) (*state.SavedOutput, error) {
	limit := state.MaxSavedOutput
	res, err := exec(ctx, drivers.ExecRequest{Timeout: taskControl, MaxOutput: limit + 1,
		Command: "tail -c " + strconv.Itoa(limit+1) + " " + shellquote.Quote(t.LogPath)})
	if err != nil {
		return nil, fmt.Errorf("saving the output of task %s: %w", t.ID, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("saving the output of task %s: tail exited %d: %s", t.ID, res.ExitCode,
			strings.TrimSpace(res.Stderr))
	}
	out := &state.SavedOutput{Text: res.Stdout, SavedAt: now.UTC(), Why: why}
	if len(out.Text) > limit {
		out.Text, out.Truncated = strings.ToValidUTF8(out.Text[len(out.Text)-limit:], ""), true
	}
	return out, nil
}

// lastLines is the last n lines of text (all of it when n ≤ 0).
func lastLines(text string, n int) string {
	if n <= 0 {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// Bounds of a task log read from a cursor.
const (
	DefaultLogRead = 64 << 10
	MaxLogRead     = 1 << 20
	logPoll        = 500 * time.Millisecond
)

// LogChunk is a piece of a task's output read from a byte offset, as a
// follower reads it: the next read starts at NextCursor, so nothing is
// read twice or skipped.
type LogChunk struct {
	Data               []byte
	Cursor, NextCursor int64
	// Size is how long the output was when read.
	Size int64
	// Saved: the sandbox has ended and this is the output saved then;
	// when that was truncated (Task.SavedOutput.Truncated), offsets count
	// from the start of what was saved.
	Saved bool
	// Done: the task has finished and everything it wrote was read.
	Done bool
}

// LogsFrom reads up to limit bytes (zero: DefaultLogRead, at most
// MaxLogRead) of a task's output from cursor, waiting up to wait (at most
// MaxSessionWait), polling the guest, while there is nothing new and the
// task runs.
func (ts *Tasks) LogsFrom(ctx context.Context, id string, cursor int64, limit int, wait time.Duration) (
	*state.Task, LogChunk, error) {
	if cursor < 0 {
		return nil, LogChunk{}, coded.New(coded.InvalidArguments, map[string]any{"field": "cursor"},
			"cursor cannot be negative; start from 0")
	}
	if limit <= 0 {
		limit = DefaultLogRead
	}
	limit = min(limit, MaxLogRead)
	wait = min(max(wait, 0), MaxSessionWait)
	for waited := time.Duration(0); ; waited += logPoll {
		t, c, err := ts.logsFrom(ctx, id, cursor, limit)
		if err != nil || len(c.Data) > 0 || c.Done || c.Saved || waited >= wait {
			return t, c, err
		}
		if err := clock.Sleep(ctx, ts.Clock, logPoll); err != nil {
			return t, c, nil
		}
	}
}

func (ts *Tasks) logsFrom(ctx context.Context, id string, cursor int64, limit int) (*state.Task, LogChunk, error) {
	// The status first: a task found finished has written all its output
	// before the read below.
	t, err := ts.Get(ctx, id)
	if err != nil {
		return t, LogChunk{}, err
	}
	c := LogChunk{Cursor: cursor}
	tgt, err := ts.Target(t.Sandbox)
	if err == nil && tgt.Instance != t.Instance {
		err = fmt.Errorf("sandbox %s runs another VM (%s) than the task's (%s)", t.Sandbox, tgt.Instance, t.Instance)
	}
	switch {
	case err != nil && t.SavedOutput != nil:
		text := t.SavedOutput.Text
		c.Saved, c.Size = true, int64(len(text))
		if cursor > c.Size {
			return t, c, pastEnd(cursor, c.Size)
		}
		c.Data = []byte(text[cursor:min(c.Size, cursor+int64(limit))])
		c.NextCursor = cursor + int64(len(c.Data))
		c.Done = c.NextCursor == c.Size
		return t, c, nil
	case err != nil:
		return t, c, fmt.Errorf("reading the output of task %s: its sandbox has ended and no output was saved: %w",
			id, err)
	}
	res, err := tgt.Exec(ctx, drivers.ExecRequest{Timeout: taskControl, MaxOutput: limit + 64,
		Command: "f=" + shellquote.Quote(t.LogPath) + `; n=$(wc -c < "$f" 2>/dev/null) || n=0; echo $n; ` +
			"tail -c +" + strconv.FormatInt(cursor+1, 10) + ` "$f" 2>/dev/null | head -c ` + strconv.Itoa(limit)})
	if err != nil {
		return t, c, err
	}
	head, data, _ := strings.Cut(res.Stdout, "\n")
	if c.Size, err = strconv.ParseInt(strings.TrimSpace(head), 10, 64); err != nil {
		return t, c, fmt.Errorf("reading the output of task %s: the guest answered %q for its size", id,
			coded.Clip(head))
	}
	if cursor > c.Size {
		return t, c, pastEnd(cursor, c.Size)
	}
	c.Data = []byte(data)
	c.NextCursor = cursor + int64(len(c.Data))
	c.Done = t.Finished() && c.NextCursor >= c.Size
	return t, c, nil
}

func pastEnd(cursor, size int64) error {
	return coded.New(coded.InvalidArguments, map[string]any{"field": "cursor", "size": size},
		"cursor %d is past the %d bytes the task wrote; pass the next_cursor of the last read", cursor, size)
}
