package mcpserver

import (
	"context"
	"slices"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

type startTaskArgs struct {
	InstanceID string            `json:"instance_id"`
	Command    string            `json:"command" jsonschema:"Shell command run detached in the guest."`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"Guest folder to run in."`
	Env        map[string]string `json:"env,omitempty" jsonschema:"Environment variables for the command."`
}

type taskArgs struct {
	TaskID string `json:"task_id" jsonschema:"A task id from start_background_task."`
}

type taskLogsArgs struct {
	TaskID string `json:"task_id" jsonschema:"A task id from start_background_task."`
	Tail   *int   `json:"tail,omitempty" default:"500" jsonschema:"Last lines to return (0 or less: all)."`
	// Following the output (execsessions.go's cursor reads, for tasks).
	Cursor   *int64 `json:"cursor,omitempty" jsonschema:"Follow the output: return bytes from this offset (0 for the start, then the last next_cursor) instead of the last lines."`
	MaxBytes *int   `json:"max_bytes,omitempty" default:"65536" jsonschema:"With cursor: most bytes to return."`
	WaitMS   *int   `json:"wait_ms,omitempty" default:"0" jsonschema:"With cursor: when there is nothing new yet, wait up to this long for more."`
}

type stopTaskArgs struct {
	TaskID string `json:"task_id" jsonschema:"A task id from start_background_task."`
	Force  bool   `json:"force,omitempty" default:"false" jsonschema:"KILL instead of TERM."`
}

// taskHead is what every task tool answers first.
type taskHead struct {
	TaskID     string `json:"task_id"`
	InstanceID string `json:"instance_id"`
	Status     string `json:"status"`
}

type startTaskResult struct {
	taskHead // task_id: the description says what takes it
	taskProcess
}

type taskProcess struct {
	PID     int    `json:"pid"`
	LogPath string `json:"log_path"`
}

// taskStatusResult is get_task_status's v1 shape.
type taskStatusResult struct {
	taskHead
	taskProcess
	CreatedAt    string  `json:"created_at"`
	StartedAt    *string `json:"started_at"`
	FinishedAt   *string `json:"finished_at"`
	ExitCode     *int    `json:"exit_code"`
	ErrorMessage *string `json:"error_message"`
}

type taskLogsResult struct {
	taskHead
	*tailLogs
	*followedLogs
}

// tailLogs are v1's get_task_logs: the last lines.
type tailLogs struct {
	Logs string `json:"logs" jsonschema:"The last lines (v1's tail form)."`
	Tail int    `json:"tail"`
}

// followedLogs are get_task_logs with a cursor: the output from it on.
type followedLogs struct {
	Output       *string `json:"output,omitempty" jsonschema:"With a cursor: the output from cursor on, as text."`
	OutputBase64 *string `json:"output_base64,omitempty" jsonschema:"The same when it is not UTF-8."`
	Cursor       int64   `json:"cursor"`
	NextCursor   int64   `json:"next_cursor" jsonschema:"The cursor to read on from."`
	Size         int64   `json:"size" jsonschema:"Bytes of output so far."`
	Done         bool    `json:"done" jsonschema:"The task ended and everything was read."`
	Saved        bool    `json:"saved_output"`
}

type stopTaskResult struct {
	taskHead
	ExitCode *int `json:"exit_code"`
}

func (s *Server) startTask(ctx context.Context, a startTaskArgs) (*startTaskResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	ws := spec.Options{Root: tgt.Resolved.Root, Host: tgt.Resolved.Host}
	t, err := s.cfg.Engine.Tasks(ws).Start(ctx, tgt.Sandbox, a.Command, a.Cwd, a.Env)
	if err != nil {
		return nil, err
	}
	return &startTaskResult{taskHead{t.ID, a.InstanceID, t.Status}, taskProcess{t.PID, t.LogPath}}, nil
}

func (s *Server) taskStatus(ctx context.Context, a taskArgs) (*taskStatusResult, error) {
	ws, err := s.taskWorkspace(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Engine.Tasks(ws).Get(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	return s.taskView(t), nil
}

func (s *Server) taskLogs(ctx context.Context, a taskLogsArgs) (*taskLogsResult, error) {
	ws, err := s.taskWorkspace(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	if a.Cursor != nil {
		return s.followTask(ctx, ws, a)
	}
	tail := 500
	if a.Tail != nil {
		tail = *a.Tail
	}
	t, logs, err := s.cfg.Engine.Tasks(ws).Logs(ctx, a.TaskID, tail)
	if err != nil {
		return nil, err
	}
	return &taskLogsResult{taskHead: s.taskHead(t), tailLogs: &tailLogs{logs, tail}}, nil
}

func (s *Server) stopTask(ctx context.Context, a stopTaskArgs) (*stopTaskResult, error) {
	ws, err := s.taskWorkspace(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Engine.Tasks(ws).Stop(ctx, a.TaskID, a.Force)
	if err != nil {
		return nil, err
	}
	return &stopTaskResult{s.taskHead(t), t.ExitCode}, nil
}

func (s *Server) taskHead(t *state.Task) taskHead {
	return taskHead{t.ID, s.taskInstanceID(t), t.Status}
}

func (s *Server) taskView(t *state.Task) *taskStatusResult {
	return &taskStatusResult{s.taskHead(t), taskProcess{t.PID, t.LogPath}, iso(t.CreatedAt), isoPtr(t.StartedAt),
		isoPtr(t.FinishedAt), t.ExitCode, optional(t.ErrorMessage)}
}

// taskInstanceID names the task's sandbox the way the tools name
// instances.
func (s *Server) taskInstanceID(t *state.Task) string {
	if e, ok := s.index.Lookup(t.Instance); ok {
		return instanceID(e)
	}
	return t.Sandbox
}

// taskWorkspace finds the served workspace whose state records the task:
// task ids are unique, and every workspace an instance was made in is in
// the host index.
func (s *Server) taskWorkspace(ctx context.Context, id string) (spec.Options, error) {
	sc, err := s.scope(ctx) // handles.go: another workspace's task reads as one that never existed
	if err != nil {
		return spec.Options{}, err
	}
	entries, _ := s.index.All()
	var roots []string
	for _, e := range entries {
		if !slices.Contains(roots, e.WorkspaceRoot) && sc.may(e.WorkspaceRoot) {
			roots = append(roots, e.WorkspaceRoot)
		}
	}
	for _, root := range roots {
		ws := spec.Options{Root: root, Host: s.cfg.Host, ConfigHome: s.cfg.ConfigHome}
		if tasks, err := s.cfg.Engine.Tasks(ws).List(); err == nil {
			for _, t := range tasks {
				if t.ID == id {
					return ws, nil
				}
			}
		}
	}
	return spec.Options{}, newToolError(sandbox.CodeTaskNotFound, "Task '"+clip(id)+"' was not found",
		map[string]any{"task_id": clip(id)})
}
