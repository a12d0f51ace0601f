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

func (s *Server) registerTasks() {
	addTool(s, toolDef{name: "start_background_task", set: setSessions, v1: true, title: "Start a background task",
		about: "Start a command detached in an instance; it outlives this call, sbf restarts and dropped " +
			"connections. Returns task_id (for get_task_status, get_task_logs, stop_task), pid and log_path."},
		s.startTask)
	addTool(s, toolDef{name: "get_task_status", set: setSessions, v1: true, title: "Get a task's status",
		about: "Report on a background task. Returns its status, exit_code, pid and times."}, s.taskStatus)
	addTool(s, toolDef{name: "get_task_logs", set: setSessions, v1: true, title: "Get a task's logs",
		about: "Read a background task's output. Returns logs, its last tail lines, or with a cursor the output " +
			"from that byte offset, next_cursor and done."}, s.taskLogs)
	addTool(s, toolDef{name: "stop_task", set: setSessions, v1: true, title: "Stop a task",
		about: "Stop a background task's whole process group (TERM, or KILL with force). Returns its status and " +
			"exit_code."}, s.stopTask)
}

func (s *Server) startTask(ctx context.Context, a startTaskArgs) (any, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	ws := spec.Options{Root: tgt.Resolved.Root, Host: tgt.Resolved.Host}
	t, err := s.cfg.Engine.Tasks(ws).Start(ctx, tgt.Sandbox, a.Command, a.Cwd, a.Env)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"task_id":     t.ID,
		"instance_id": a.InstanceID,
		"status":      t.Status,
		"pid":         t.PID,
		"log_path":    t.LogPath,
	}, nil
}

func (s *Server) taskStatus(ctx context.Context, a taskArgs) (any, error) {
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

func (s *Server) taskLogs(ctx context.Context, a taskLogsArgs) (any, error) {
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
	return map[string]any{
		"task_id":     t.ID,
		"instance_id": s.taskInstanceID(t),
		"status":      t.Status,
		"logs":        logs,
		"tail":        tail,
	}, nil
}

func (s *Server) stopTask(ctx context.Context, a stopTaskArgs) (any, error) {
	ws, err := s.taskWorkspace(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Engine.Tasks(ws).Stop(ctx, a.TaskID, a.Force)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"task_id":     t.ID,
		"instance_id": s.taskInstanceID(t),
		"status":      t.Status,
		"exit_code":   t.ExitCode,
	}, nil
}

// taskView is get_task_status's v1 shape.
func (s *Server) taskView(t *state.Task) map[string]any {
	return map[string]any{"task_id": t.ID, "instance_id": s.taskInstanceID(t), "status": t.Status, "pid": t.PID,
		"created_at": iso(t.CreatedAt), "started_at": isoPtr(t.StartedAt), "finished_at": isoPtr(t.FinishedAt),
		"exit_code": t.ExitCode, "error_message": nilIfEmpty(t.ErrorMessage), "log_path": t.LogPath}
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
