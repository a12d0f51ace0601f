package mcpserver

import (
	"context"
	"github.com/sandboxforge/sbf/internal/clock"
	"slices"
	"sync"
	"time"

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

const (
	// maxTaskTTLMillis bounds how long a finished task's result is kept:
	// the server's memory, whatever the client asks.
	maxTaskTTLMillis = int64(60 * 60 * 1000)
	// maxRunningTasks bounds the tasks at work at once.
	maxRunningTasks = 32
	taskLinkField   = "sbf.dev/task-link" // never sent: the request's Meta is not echoed
	// taskTombstone is how long mcp-go still answers "expired" for a task
	// past its TTL: its owner is known that long too.
	taskTombstone = 5 * time.Minute
	// unknownTaskID is what a request for another's task asks mcp-go for:
	// no task has it, so the answer is the one an id that never existed gets.
	unknownTaskID = "sbf-no-such-task"
	// taskPollMillis is the pollInterval a task suggests (mcp-go sets none):
	// an engine step takes seconds, a boot minutes; every 2 s picks a short
	// command's result up soon without a client polling a boot in a loop.
	taskPollMillis = int64(2000)
)

// taskLink joins a task's work to the task id mcp-go gave it, and says
// whose the task is (handles.go): the client session that made it ("" for
// a caller without one) and the workspaces its call used.
type taskLink struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	cancelled bool
	ended     bool // the work is over: a task that ends before its id is known is never listed
	session   string
	roots     []string
	until     time.Time // when mcp-go has forgotten the task
}

type taskLinkKey struct{}

// noteWorkspace records that the call running as a task (if it is one)
// used the workspace at root: only a caller who may use it reaches the task.
func noteWorkspace(ctx context.Context, root string) {
	link, _ := ctx.Value(taskLinkKey{}).(*taskLink)
	if link == nil {
		return
	}
	link.mu.Lock()
	defer link.mu.Unlock()
	if !slices.Contains(link.roots, root) {
		link.roots = append(link.roots, root)
	}
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

// taskTable holds the links of the tasks at work, and of every task mcp-go
// still answers for (its owner), by task id.
type taskTable struct {
	mu    sync.Mutex
	links map[string]*taskLink
	owned map[string]*taskLink
}

// taskOptions are the server options and hooks that make tasks work.
func (s *Server) taskOptions(hooks *server.Hooks) []server.ServerOption {
	s.tasks.links, s.tasks.owned = map[string]*taskLink{}, map[string]*taskLink{}
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
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
		req.Params.Meta.AdditionalFields[taskLinkField] = &taskLink{session: sessionOf(ctx)}
	})
	s.suggestPolling(hooks)
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
			link.until = clock.Real{}.Now().Add( // mcp-go keeps tasks by the real time
				time.Duration(*req.Params.Task.TTL)*time.Millisecond + taskTombstone)
			s.ownLocked(created.Task.TaskId, link)
		}
	})
	s.guardTasks(hooks)
	hooks.AddBeforeCancelTask(func(ctx context.Context, _ any, req *mcp.CancelTaskRequest) {
		if !s.ownsTask(ctx, &req.Params.TaskId) { // another's task: not stopped, and unknown
			return
		}
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
	work = context.WithValue(work, taskLinkKey{}, link)
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

// guardTasks makes tasks/get, tasks/result and tasks/list answer only for
// the caller's own tasks (tasks/cancel's hook above does the same): mcp-go
// keeps tasks apart by session only when both sides have one, and a caller
// without one (a request with no session, a 2026-07-28 client) would see
// every task.
func (s *Server) guardTasks(hooks *server.Hooks) {
	hooks.AddBeforeGetTask(func(ctx context.Context, _ any, req *mcp.GetTaskRequest) {
		s.ownsTask(ctx, &req.Params.TaskId)
	})
	hooks.AddBeforeTaskResult(func(ctx context.Context, _ any, req *mcp.TaskResultRequest) {
		s.ownsTask(ctx, &req.Params.TaskId)
	})
	hooks.AddAfterListTasks(func(ctx context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		if res != nil {
			res.Tasks = slices.DeleteFunc(res.Tasks, func(t mcp.Task) bool { return !s.ownsTask(ctx, &t.TaskId) })
		}
	})
}

// ownsTask tells whether the caller may reach the task *id: its session
// made it, and it may use every workspace the task's call used (handles.go).
// Otherwise *id becomes an id no task has, so mcp-go answers as it does
// for one that never existed.
func (s *Server) ownsTask(ctx context.Context, id *string) bool {
	s.tasks.mu.Lock()
	link := s.tasks.owned[*id]
	s.tasks.mu.Unlock()
	if link != nil && link.session == sessionOf(ctx) {
		link.mu.Lock()
		roots := slices.Clone(link.roots)
		link.mu.Unlock()
		if sc, err := s.scope(ctx); err == nil && sc.mayAll(roots) {
			return true
		}
	}
	*id = unknownTaskID
	return false
}

// ownLocked records a task's owner, and forgets the owners of tasks
// mcp-go no longer answers for.
func (s *Server) ownLocked(id string, link *taskLink) {
	now := clock.Real{}.Now() // as mcp-go, which keeps tasks by the real time
	for old, l := range s.tasks.owned {
		if now.After(l.until) {
			delete(s.tasks.owned, old)
		}
	}
	s.tasks.owned[id] = link
}

// sessionOf is the id of the caller's client session ("" for none).
func sessionOf(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

// suggestPolling has every task the server answers with (made, got,
// listed) suggest its pollInterval.
func (s *Server) suggestPolling(hooks *server.Hooks) {
	suggest := func(t *mcp.Task) {
		if t.PollInterval == nil {
			every := taskPollMillis
			t.PollInterval = &every
		}
	}
	hooks.AddAfterCallTool(func(_ context.Context, _ any, _ *mcp.CallToolRequest, result any) {
		if created, ok := result.(*mcp.CreateTaskResult); ok {
			suggest(&created.Task)
		}
	})
	hooks.AddAfterGetTask(func(_ context.Context, _ any, _ *mcp.GetTaskRequest, res *mcp.GetTaskResult) {
		suggest(&res.Task)
	})
	hooks.AddAfterListTasks(func(_ context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		for i := range res.Tasks {
			suggest(&res.Tasks[i])
		}
	})
}
