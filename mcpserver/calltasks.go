package mcpserver

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Long calls are available as MCP tasks (tools/call with "task"): the
// client gets a task id at once, polls tasks/get and tasks/result, and may
// send tasks/cancel, which stops the engine's work as cancelling the call
// would.
//
// mcp-go v1.2.1 runs a task under the context of the tools/call request
// that created it, and that context ends as soon as the task is created
// (mark3labs/mcp-go#897): the work would see "context canceled" at once.
// So a task's work runs detached from its request, and tasks/cancel
// reaches it through a hook, by the task id mcp-go answered with.

// taskTools can run for minutes.
var taskTools = func() map[string]bool {
	names := []string{"create_instance", "run_ephemeral", "destroy_instance", "clone_instance", "prepare_workspace",
		"apply", "run_command", "docker_build", "docker_compose", "validate_image", "snapshot_instance",
		"restore_snapshot", "export_snapshot", "import_snapshot", "copy_to_instance", "copy_from_instance",
		"sync_instance_to_workspace", "collect_artifacts"}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set
}()

const (
	// maxTaskTTLMillis bounds how long a finished task's result is kept:
	// the server's memory, whatever the client asks.
	maxTaskTTLMillis = int64(60 * 60 * 1000)
	// maxRunningTasks bounds the tasks at work at once.
	maxRunningTasks = 32
	taskLinkField   = "sbf.dev/task-link" // never sent: the request's Meta is not echoed
)

// taskExecution says whether a tool may run as a task.
func taskExecution(name string) *mcp.ToolExecution {
	if !taskTools[name] {
		return nil
	}
	return &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
}

// taskLink joins a task's work to the task id mcp-go gave it.
type taskLink struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	cancelled bool
	ended     bool // the work is over: a task that ends before its id is known is never listed
}

func (l *taskLink) setCancel(cancel context.CancelFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel = cancel
	if l.cancelled {
		cancel()
	}
}

func (l *taskLink) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelled = true
	if l.cancel != nil {
		l.cancel()
	}
}

// taskTable holds the links of the tasks at work, by task id.
type taskTable struct {
	mu    sync.Mutex
	links map[string]*taskLink
}

// taskOptions are the server options and hooks that make tasks work.
func (s *Server) taskOptions(hooks *server.Hooks) []server.ServerOption {
	s.tasks.links = map[string]*taskLink{}
	hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		if req.Params.Task == nil {
			return
		}
		if ttl := req.Params.Task.TTL; ttl == nil || *ttl <= 0 || *ttl > maxTaskTTLMillis {
			bounded := maxTaskTTLMillis
			req.Params.Task.TTL = &bounded
		}
		if req.Params.Meta == nil {
			req.Params.Meta = &mcp.Meta{}
		}
		if req.Params.Meta.AdditionalFields == nil {
			req.Params.Meta.AdditionalFields = map[string]any{}
		}
		req.Params.Meta.AdditionalFields[taskLinkField] = &taskLink{}
	})
	hooks.AddAfterCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		created, ok := result.(*mcp.CreateTaskResult)
		if link := linkOf(*req); ok && link != nil {
			s.tasks.mu.Lock()
			defer s.tasks.mu.Unlock()
			link.mu.Lock()
			defer link.mu.Unlock()
			if !link.ended {
				s.tasks.links[created.Task.TaskId] = link
			}
		}
	})
	hooks.AddBeforeCancelTask(func(_ context.Context, _ any, req *mcp.CancelTaskRequest) {
		s.tasks.mu.Lock()
		link := s.tasks.links[req.Params.TaskId]
		s.tasks.mu.Unlock()
		if link != nil {
			link.stop()
		}
	})
	return []server.ServerOption{server.WithTaskCapabilities(true, true, true),
		server.WithMaxConcurrentTasks(maxRunningTasks)}
}

// runningTasks counts the tasks whose work has not ended.
func (s *Server) runningTasks() int {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return len(s.tasks.links)
}

func linkOf(req mcp.CallToolRequest) *taskLink {
	if req.Params.Meta == nil {
		return nil
	}
	link, _ := req.Params.Meta.AdditionalFields[taskLinkField].(*taskLink)
	return link
}

// asTask gives a call made as a task a context of its own, ended by
// tasks/cancel rather than by its request; done forgets the task's link.
func (s *Server) asTask(ctx context.Context, req mcp.CallToolRequest) (context.Context, func()) {
	link := linkOf(req)
	if req.Params.Task == nil || link == nil {
		return ctx, func() {}
	}
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	link.setCancel(cancel)
	return work, func() {
		cancel()
		s.tasks.mu.Lock()
		defer s.tasks.mu.Unlock()
		link.mu.Lock()
		link.ended = true
		link.mu.Unlock()
		for id, l := range s.tasks.links {
			if l == link {
				delete(s.tasks.links, id)
			}
		}
	}
}
