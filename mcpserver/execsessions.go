package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// Exec sessions (issue 31): a command an agent drives over several calls.
// The session engine is the data plane's (sandbox.Sessions); these tools
// translate its answers into JSON and nothing more.

type startSessionArgs struct {
	InstanceID string            `json:"instance_id"`
	Argv       []string          `json:"argv,omitempty" jsonschema:"The command as a list of words, each passed as is (give argv or command)."`
	Command    string            `json:"command,omitempty" jsonschema:"A shell command line, run by sh -c (give argv or command)."`
	Env        map[string]string `json:"env,omitempty" jsonschema:"Environment variables for the command."`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"Guest folder to run in."`
	TTY        bool              `json:"tty,omitempty" jsonschema:"Run on a terminal: one output stream, input echoed, INT and QUIT typed as Ctrl-C and Ctrl-\\."`
	Timeout    *int              `json:"timeout_seconds,omitempty" jsonschema:"End the command after this many seconds (default: no limit; the session still ends when idle)."`
}

type readSessionArgs struct {
	SessionID string `json:"session_id" jsonschema:"A session id from start_session."`
	Cursor    *int64 `json:"cursor,omitempty" default:"0" jsonschema:"Where to read from: 0 for the start, else the last read's next_cursor."`
	MaxBytes  *int   `json:"max_bytes,omitempty" default:"65536" jsonschema:"Most output bytes to return."`
	WaitMS    *int   `json:"wait_ms,omitempty" default:"0" jsonschema:"When there is no new output yet, wait up to this long for some."`
}

type writeSessionArgs struct {
	SessionID  string  `json:"session_id" jsonschema:"A session id from start_session."`
	Data       *string `json:"data,omitempty" jsonschema:"UTF-8 text to write to the command's stdin (add \\n to end a line)."`
	DataBase64 *string `json:"data_base64,omitempty" jsonschema:"Bytes to write to the command's stdin, base64-encoded (instead of data)."`
	CloseStdin bool    `json:"close_stdin,omitempty" jsonschema:"Close the command's stdin after this input (end of file)."`
}

type signalSessionArgs struct {
	SessionID string `json:"session_id" jsonschema:"A session id from start_session."`
	Signal    string `json:"signal" jsonschema:"One of INT, TERM, KILL, HUP, QUIT, USR1, USR2."`
}

type sessionArgs struct {
	SessionID string `json:"session_id" jsonschema:"A session id from start_session."`
}

// sessionResult is a session as every session tool answers it.
type sessionResult struct {
	SessionID          string       `json:"session_id"`
	InstanceID         string       `json:"instance_id"`
	Command            string       `json:"command"`
	TTY                bool         `json:"tty"`
	Status             string       `json:"status" jsonschema:"running or ended."`
	StartedAt          string       `json:"started_at"`
	OutputBytes        int64        `json:"output_bytes" jsonschema:"Output so far."`
	BufferDroppedBytes int64        `json:"buffer_dropped_bytes" jsonschema:"Output the bounded buffer let go."`
	IdleTimeoutSeconds int64        `json:"idle_timeout_seconds"`
	StdinClosed        bool         `json:"stdin_closed"`
	Exit               *sessionExit `json:"exit" jsonschema:"exit_code, reason, timed_out, ended_at once it ended."`
}

type sessionExit struct {
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason"`
	TimedOut bool   `json:"timed_out"`
	EndedAt  string `json:"ended_at"`
	Error    string `json:"error,omitempty"`
}

type readSessionResult struct {
	sessionResult
	Events       []sessionEvent `json:"events" jsonschema:"Output after the cursor: seq, stream, offset, and text (or data_base64 when it is not UTF-8)."`
	Cursor       int64          `json:"cursor"`
	NextCursor   int64          `json:"next_cursor" jsonschema:"The cursor of the next read."`
	DroppedBytes int64          `json:"dropped_bytes" jsonschema:"Output dropped before this reader read it."`
	Done         bool           `json:"done" jsonschema:"The session ended and all was read."`
}

type sessionEvent struct {
	Seq        int64   `json:"seq"`
	Stream     string  `json:"stream"`
	Offset     int64   `json:"offset"`
	Text       *string `json:"text,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
}

type writeSessionResult struct {
	sessionResult
	BytesWritten int `json:"bytes_written"`
}

type signalSessionResult struct {
	sessionResult
	Signal    string `json:"signal"`
	Delivered string `json:"delivered" jsonschema:"How the signal was delivered."`
}

type closeSessionResult struct {
	sessionResult
	Closed bool `json:"closed"`
}

func (s *Server) startSession(ctx context.Context, a startSessionArgs) (*sessionResult, error) {
	var timeout time.Duration
	if a.Timeout != nil {
		if *a.Timeout <= 0 {
			return nil, newToolError(coded.InvalidArguments, "timeout_seconds must be positive",
				map[string]any{"field": "timeout_seconds"})
		}
		timeout = time.Duration(*a.Timeout) * time.Second
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	ws, err := s.optionsAt(tgt.Resolved.Root, tgt.Resolved.WorkspaceID, nil)
	if err != nil {
		return nil, err
	}
	name, instance := tgt.Sandbox, tgt.Instance
	alive := func(context.Context) error {
		now, err := s.cfg.Engine.Target(ws, name)
		if err == nil && now.Instance != instance {
			err = fmt.Errorf("sandbox %s runs another VM now", name)
		}
		return err
	}
	info, err := s.execSessions.Start(ctx, tgt, sandbox.SessionRequest{Argv: a.Argv, Command: a.Command, Env: a.Env,
		Cwd: a.Cwd, TTY: a.TTY, Timeout: timeout, Alive: alive})
	if err != nil {
		return nil, err
	}
	view := s.sessionView(info)
	return &view, nil
}

func (s *Server) readSession(ctx context.Context, a readSessionArgs) (*readSessionResult, error) {
	var cursor int64
	maxBytes, wait := 0, time.Duration(0)
	if a.Cursor != nil {
		cursor = *a.Cursor
	}
	if a.MaxBytes != nil {
		if maxBytes = *a.MaxBytes; maxBytes <= 0 {
			return nil, newToolError(coded.InvalidArguments, "max_bytes must be positive",
				map[string]any{"field": "max_bytes"})
		}
	}
	if a.WaitMS != nil {
		if *a.WaitMS < 0 {
			return nil, newToolError(coded.InvalidArguments, "wait_ms cannot be negative",
				map[string]any{"field": "wait_ms"})
		}
		wait = time.Duration(*a.WaitMS) * time.Millisecond
	}
	sc, err := s.scope(ctx) // handles.go: a session of a workspace the caller may not use is unknown
	if err != nil {
		return nil, err
	}
	out, err := s.execSessions.Read(ctx, sc.may, a.SessionID, cursor, maxBytes, wait)
	if err != nil {
		return nil, err
	}
	if n := len(out.Events); n > 0 && !out.Done {
		// A character cut at the end of this read is left for the next one,
		// so text stays text.
		last := &out.Events[n-1]
		if cut := cutRune(last.Data); cut > 0 && cut < len(last.Data) {
			last.Data = last.Data[:len(last.Data)-cut]
			out.NextCursor -= int64(cut)
		}
	}
	events := make([]sessionEvent, 0, len(out.Events))
	for _, e := range out.Events {
		ev := sessionEvent{Seq: e.Seq, Stream: e.Stream, Offset: e.Offset}
		if text := string(e.Data); utf8.ValidString(text) {
			ev.Text = &text
		} else {
			encoded := base64.StdEncoding.EncodeToString(e.Data)
			ev.DataBase64 = &encoded
		}
		events = append(events, ev)
	}
	return &readSessionResult{s.sessionView(out.SessionInfo), events, out.Cursor, out.NextCursor, out.Missed,
		out.Done}, nil
}

// cutRune is how many bytes at the end of p begin a UTF-8 character that
// is not complete there (0 when none).
func cutRune(p []byte) int {
	for cut := 1; cut <= 3 && cut <= len(p); cut++ {
		if utf8.RuneStart(p[len(p)-cut]) {
			if !utf8.FullRune(p[len(p)-cut:]) {
				return cut
			}
			return 0
		}
	}
	return 0
}

func (s *Server) writeSession(ctx context.Context, a writeSessionArgs) (*writeSessionResult, error) {
	var data []byte
	switch {
	case a.Data != nil && a.DataBase64 != nil:
		return nil, newToolError(coded.InvalidArguments, "give data or data_base64, not both",
			map[string]any{"field": "data_base64"})
	case a.Data != nil:
		data = []byte(*a.Data)
	case a.DataBase64 != nil:
		var err error
		if data, err = base64.StdEncoding.DecodeString(*a.DataBase64); err != nil {
			return nil, newToolError(coded.InvalidArguments, "data_base64 is not base64: "+clip(err.Error()),
				map[string]any{"field": "data_base64"})
		}
	case !a.CloseStdin:
		return nil, newToolError(coded.InvalidArguments, "give data or data_base64 to write, or close_stdin",
			map[string]any{"field": "data"})
	}
	sc, err := s.scope(ctx)
	if err != nil {
		return nil, err
	}
	info, err := s.execSessions.Write(sc.may, a.SessionID, data, a.CloseStdin)
	if err != nil {
		return nil, err
	}
	return &writeSessionResult{s.sessionView(info), len(data)}, nil
}

func (s *Server) signalSession(ctx context.Context, a signalSessionArgs) (*signalSessionResult, error) {
	sc, err := s.scope(ctx)
	if err != nil {
		return nil, err
	}
	info, how, err := s.execSessions.Signal(sc.may, a.SessionID, drivers.Signal(a.Signal))
	if err != nil {
		return nil, err
	}
	return &signalSessionResult{s.sessionView(info), a.Signal, how}, nil
}

func (s *Server) closeSession(ctx context.Context, a sessionArgs) (*closeSessionResult, error) {
	sc, err := s.scope(ctx)
	if err != nil {
		return nil, err
	}
	info, err := s.execSessions.Close(sc.may, a.SessionID)
	if err != nil {
		return nil, err
	}
	return &closeSessionResult{s.sessionView(info), true}, nil
}

// sessionView is a session's fields every session tool answers with.
func (s *Server) sessionView(i sandbox.SessionInfo) sessionResult {
	id := i.Sandbox
	if e, ok := s.index.Lookup(i.Instance); ok {
		id = instanceID(e)
	}
	out := sessionResult{SessionID: i.ID, InstanceID: id, Command: i.Command, TTY: i.TTY, Status: i.Status,
		StartedAt: iso(i.Started), OutputBytes: i.OutputBytes, BufferDroppedBytes: i.DroppedBytes,
		IdleTimeoutSeconds: int64(i.Idle / time.Second), StdinClosed: i.StdinClosed}
	if x := i.Exit; x != nil {
		out.Exit = &sessionExit{x.Code, x.Reason, x.TimedOut, iso(x.At), x.Error}
	}
	return out
}

// followTask is get_task_logs with a cursor: the task's output from a
// byte offset, as read_session reads a session's.
func (s *Server) followTask(ctx context.Context, ws spec.Options, a taskLogsArgs) (*taskLogsResult, error) {
	limit, wait := 0, time.Duration(0)
	if a.MaxBytes != nil {
		if limit = *a.MaxBytes; limit <= 0 {
			return nil, newToolError(coded.InvalidArguments, "max_bytes must be positive",
				map[string]any{"field": "max_bytes"})
		}
	}
	if a.WaitMS != nil {
		wait = time.Duration(max(*a.WaitMS, 0)) * time.Millisecond
	}
	t, c, err := s.cfg.Engine.Tasks(ws).LogsFrom(ctx, a.TaskID, *a.Cursor, limit, wait)
	if err != nil {
		return nil, err
	}
	if cut := cutRune(c.Data); !c.Done && cut > 0 && cut < len(c.Data) {
		c.Data, c.NextCursor = c.Data[:len(c.Data)-cut], c.NextCursor-int64(cut)
	}
	f := &followedLogs{Cursor: c.Cursor, NextCursor: c.NextCursor, Size: c.Size, Done: c.Done, Saved: c.Saved}
	if text := string(c.Data); utf8.ValidString(text) {
		f.Output = &text
	} else {
		encoded := base64.StdEncoding.EncodeToString(c.Data)
		f.OutputBase64 = &encoded
	}
	return &taskLogsResult{taskHead: s.taskHead(t), followedLogs: f}, nil
}
