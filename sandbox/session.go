package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// An exec session is a command that outlives the call that started it:
// its caller writes to its stdin, reads what it printed after a cursor,
// signals it and closes it, one call at a time (an agent's MCP tools, which
// cannot hold a stream open). The session holds the command's output in
// memory until read, so every buffer is bounded by the operator's output
// ceiling, and a session nobody touches ends on its own.

// Codes of the session calls' failures.
const (
	CodeSessionNotFound = "SESSION_NOT_FOUND"
	CodeSessionLimit    = "SESSION_LIMIT_EXCEEDED"
	CodeSessionEnded    = "SESSION_ENDED"
	CodeSessionStdin    = "SESSION_STDIN_FULL"
)

// Bounds of sessions.
const (
	DefaultSessionIdle  = 5 * time.Minute
	DefaultMaxSessions  = 16               // per workspace
	MaxSessionWait      = 30 * time.Second // a read's longest wait: clients time requests out at 60 s
	DefaultSessionRead  = 64 << 10
	MaxSessionRead      = 1 << 20
	maxSessionEvent     = 32 << 10
	maxSessionStdin     = 1 << 20 // input queued for a command that does not read it yet
	eventOverhead       = 64      // what an event costs beyond its bytes, so tiny writes are bounded too
	sessionLiveEvery    = 15 * time.Second
	sessionCloseWait    = 10 * time.Second
	rememberEndedFor    = 256
	sessionSignalBuffer = 8
)

// DefaultMaxSessionsTotal bounds one server's sessions, all workspaces
// together: each may hold the output ceiling in memory.
const DefaultMaxSessionsTotal = 32

// SessionSignals are the signals a session's command may be sent.
var SessionSignals = []drivers.Signal{"INT", "TERM", "KILL", "HUP", "QUIT", "USR1", "USR2"}

// Why a session ended, when sbf ended it rather than its command.
const (
	EndClosed       = "closed"
	EndIdle         = "idle"
	EndSandbox      = "sandbox_ended"
	EndServer       = "server_stopped"
	EndTimedOut     = "timed_out"
	EndCommandError = "error"
)

// Sessions is one server's table of exec sessions. Each session belongs
// to the workspace it was started in, and every call on one names the
// workspaces its caller may use (a Scope): a session of another workspace
// is answered as one that never existed, in the same words.
type Sessions struct {
	Clock clock.Clock
	// Idle is how long a session may go without a call before it ends
	// (zero: DefaultSessionIdle).
	Idle time.Duration
	// Max is how many sessions of one workspace may be open at once (zero:
	// DefaultMaxSessions): one workspace's caller cannot take another's.
	Max int
	// Total is how many sessions may be open at once in all (zero:
	// DefaultMaxSessionsTotal; never below Max).
	Total int

	mu       sync.Mutex
	live     map[string]*Session
	ended    map[string]endedSession // recently ended id → why, so a late call says why it is gone
	order    []string
	sweeping bool
}

// Scope says whether a caller may use a workspace (its root, as the
// session recorded it).
type Scope func(workspace string) bool

// endedSession is what is remembered of a session that ended.
type endedSession struct{ why, workspace string }

// SessionRequest is a command to start as a session.
type SessionRequest struct {
	Argv    []string // run as is, each word quoted
	Command string   // a shell command line (exactly one of Argv and Command)
	Env     map[string]string
	Cwd     string
	TTY     bool          // on a terminal: one output stream, input echoed, Ctrl-C in band
	Timeout time.Duration // zero: none
	// Alive says whether the session's sandbox still holds its lease and
	// VM; the session ends when it does not. Nil: it is not checked.
	Alive func(ctx context.Context) error
}

// Session is one running (or finished, not yet closed) command.
type Session struct {
	ID       string
	Sandbox  string
	Instance string
	// Workspace is the root of the workspace the session was started in.
	Workspace string
	Command   string
	TTY       bool
	Started   time.Time

	cancel   context.CancelFunc
	signals  chan drivers.Signal
	stdinR   *os.File
	stdinW   *os.File
	closeW   sync.Once
	finished chan struct{}
	wake     chan struct{} // the stdin pump has input or a close to do
	maxKept  int64
	alive    func(ctx context.Context) error

	mu          sync.Mutex
	events      []SessionEvent
	seq         int64
	offset      int64 // bytes the command printed, both streams
	first       int64 // offset of the oldest byte still held
	kept        int64
	dropped     int64
	notify      chan struct{} // closed and replaced when output or the end comes
	exit        *SessionExit
	endWhy      string
	lastUse     time.Time
	lastLive    time.Time
	stdinQ      [][]byte
	stdinQueued int
	stdinClose  bool // asked; done once the queue drains
	stdinErr    error
}

// SessionEvent is a piece of output. Offset is where it starts in the
// session's output (both streams in the order they came); a read's cursor
// is such an offset, so no byte is read twice or skipped.
type SessionEvent struct {
	Seq    int64
	Stream string // stdout or stderr ("output" on a terminal)
	Offset int64
	Data   []byte
}

// SessionExit is how a session's command ended.
type SessionExit struct {
	Code     int
	TimedOut bool
	// Reason is "exited" when the command ended by itself, else why sbf
	// ended it (EndClosed, EndIdle, EndSandbox, EndServer, EndTimedOut, EndCommandError).
	Reason string
	Error  string
	At     time.Time
}

// SessionInfo is a session as a door reports it.
type SessionInfo struct {
	ID, Sandbox, Instance, Command string
	TTY                            bool
	Status                         string // running, exited (by itself) or ended (by sbf)
	Started                        time.Time
	Exit                           *SessionExit
	OutputBytes, DroppedBytes      int64
	Idle                           time.Duration
	StdinClosed                    bool
}

// SessionOutput is what a read returns.
type SessionOutput struct {
	SessionInfo
	Events []SessionEvent
	Cursor int64
	// NextCursor is the cursor of the next read.
	NextCursor int64
	// Missed is how many bytes after Cursor were dropped (the buffer was
	// full) before this read.
	Missed int64
	// Done: the command has ended and everything it printed was read.
	Done bool
}

func (ss *Sessions) idle() time.Duration {
	if ss.Idle > 0 {
		return ss.Idle
	}
	return DefaultSessionIdle
}

func (ss *Sessions) max() int {
	if ss.Max > 0 {
		return ss.Max
	}
	return DefaultMaxSessions
}

func (ss *Sessions) total() int {
	if ss.Total > 0 {
		return max(ss.Total, ss.max())
	}
	return max(DefaultMaxSessionsTotal, ss.max())
}

// Start runs a command in the target as a new session.
func (ss *Sessions) Start(ctx context.Context, tgt *Target, req SessionRequest) (SessionInfo, error) {
	command, err := sessionCommand(req)
	if err != nil {
		return SessionInfo{}, err
	}
	run, err := ss.runner(tgt, req, command)
	if err != nil {
		return SessionInfo{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return SessionInfo{}, fmt.Errorf("starting a session in %s: %w", tgt.Sandbox, err)
	}
	now := ss.Clock.Now()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Session{ID: newSessionID(), Sandbox: tgt.Sandbox, Instance: tgt.Instance, Workspace: tgt.workspace(),
		Command: command, TTY: req.TTY, Started: now, cancel: cancel,
		signals: make(chan drivers.Signal, sessionSignalBuffer), stdinR: r, stdinW: w,
		finished: make(chan struct{}), wake: make(chan struct{}, 1), maxKept: tgt.MaxOutput, alive: req.Alive,
		notify: make(chan struct{}), lastUse: now, lastLive: now}
	if s.maxKept <= 0 {
		s.maxKept = policy.DefaultMaxOutputBytes
	}
	if err := ss.admit(ctx, s); err != nil {
		cancel()
		r.Close()
		w.Close()
		return SessionInfo{}, err
	}
	if req.TTY && req.Timeout > 0 {
		go s.deadline(ss.Clock, req.Timeout)
	}
	go s.pump()
	go func() {
		code, timedOut, err := run(sctx, s)
		s.finish(code, timedOut, err, ss.Clock.Now())
	}()
	return s.info(ss.idle()), nil
}

// sessionCommand is the shell command line a request runs.
func sessionCommand(req SessionRequest) (string, error) {
	switch {
	case len(req.Argv) > 0 && req.Command != "":
		return "", coded.New(coded.InvalidArguments, map[string]any{"field": "argv"},
			"give either argv or command, not both")
	case len(req.Argv) > 0:
		// The shell becomes the command: signals and a terminal's end reach
		// it, not a shell waiting for it.
		return "exec " + shellquote.Join(req.Argv), nil
	case strings.TrimSpace(req.Command) == "":
		return "", coded.New(coded.InvalidArguments, map[string]any{"field": "command"},
			"give the command to run: argv (a list of words) or command (a shell command line)")
	}
	return req.Command, nil
}

// runner checks the target's backend can run the session and returns
// what runs it: the backend's streaming exec, or its terminal.
func (ss *Sessions) runner(tgt *Target, req SessionRequest, command string) (
	func(context.Context, *Session) (int, bool, error), error) {
	drv, err := tgt.Driver()
	if err != nil {
		return nil, err
	}
	if req.TTY {
		if _, ok := drv.(drivers.Terminal); !ok {
			return nil, coded.New(coded.InvalidArguments, map[string]any{"field": "tty", "driver": tgt.DriverName},
				"the %s driver of sandbox %s cannot open a terminal; start the session without tty",
				tgt.DriverName, tgt.Sandbox)
		}
		// A terminal's command gets no prelude from the backend: it is the
		// command's own first steps, as for exec.
		pre, err := withPrelude(drivers.ExecRequest{Command: command, Workdir: req.Cwd, Env: req.Env})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, s *Session) (int, bool, error) {
			code, err := tgt.Terminal(ctx, drivers.TerminalRequest{Command: pre.Command, Term: "xterm-256color",
				Size: drivers.WindowSize{Rows: 24, Cols: 80}, Stdin: s.stdinR, Stdout: stream{s, "output"}})
			return code, false, err
		}, nil
	}
	if _, ok := drv.(drivers.Execer); !ok {
		return nil, coded.New(coded.BackendUnavailable, map[string]any{"driver": tgt.DriverName},
			"the %s driver of sandbox %s cannot run commands", tgt.DriverName, tgt.Sandbox)
	}
	if _, err := withPrelude(drivers.ExecRequest{Env: req.Env}); err != nil {
		return nil, err // a bad variable name is the caller's, before anything runs
	}
	return func(ctx context.Context, s *Session) (int, bool, error) {
		// The session keeps the output itself: the result's copy is one byte.
		res, err := tgt.Exec(ctx, drivers.ExecRequest{Command: command, Workdir: req.Cwd, Env: req.Env,
			Stdin: s.stdinR, Timeout: req.Timeout, MaxOutput: 1, Signals: s.signals,
			StdoutTo: stream{s, "stdout"}, StderrTo: stream{s, "stderr"}})
		return res.ExitCode, res.TimedOut, err
	}, nil
}

// admit adds a session to the table unless its workspace's share or the
// table is full. The second refusal says no more than that: how many
// sessions other workspaces hold is theirs.
func (ss *Sessions) admit(ctx context.Context, s *Session) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	open := 0
	for _, o := range ss.live {
		if o.Workspace == s.Workspace {
			open++
		}
	}
	if open >= ss.max() {
		return coded.New(CodeSessionLimit, map[string]any{"max_sessions": ss.max(), "open": open},
			"%d exec sessions of this workspace are open, the most this server allows; close one with "+
				"close_session (or let an idle one end after %s) and start again", open, ss.idle())
	}
	if len(ss.live) >= ss.total() {
		return coded.New(CodeSessionLimit, map[string]any{"max_sessions_total": ss.total()},
			"this server holds the most exec sessions it allows across its workspaces (%d); close one of "+
				"yours with close_session or try again later", ss.total())
	}
	if ss.live == nil {
		ss.live = map[string]*Session{}
	}
	ss.live[s.ID] = s
	if !ss.sweeping {
		ss.sweeping = true
		go ss.sweeper(context.WithoutCancel(ctx))
	}
	return nil
}

// get finds a live session the caller may use and records the call as
// activity. A session of a workspace outside the caller's scope, live or
// ended, gets the answer an id that never existed gets.
func (ss *Sessions) get(may Scope, id string) (*Session, error) {
	if may == nil {
		may = func(string) bool { return false }
	}
	ss.mu.Lock()
	s, ok := ss.live[id]
	gone, ended := ss.ended[id]
	ss.mu.Unlock()
	ok = ok && may(s.Workspace)
	ended = ended && may(gone.workspace)
	if !ok {
		details := map[string]any{"session_id": coded.Clip(id)}
		if ended {
			details["ended"] = gone.why
			return nil, coded.New(CodeSessionNotFound, details,
				"session %s has ended (%s); start a new one with start_session", coded.Clip(id), gone.why)
		}
		return nil, coded.New(CodeSessionNotFound, details,
			"no session %s on this server; start one with start_session", coded.Clip(id))
	}
	s.mu.Lock()
	s.lastUse = ss.Clock.Now()
	s.mu.Unlock()
	return s, nil
}

// Close ends the session's command if it still runs and forgets the
// session; its output is gone with it.
func (ss *Sessions) Close(may Scope, id string) (SessionInfo, error) {
	s, err := ss.get(may, id)
	if err != nil {
		return SessionInfo{}, err
	}
	return ss.end(s, EndClosed, "it was closed"), nil
}

// List is the open sessions, oldest first.
func (ss *Sessions) List() []SessionInfo {
	ss.mu.Lock()
	all := make([]*Session, 0, len(ss.live))
	for _, s := range ss.live {
		all = append(all, s)
	}
	ss.mu.Unlock()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, s.info(ss.idle()))
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmpTimeThenID(a.Started, b.Started, a.ID, b.ID)
	})
	return out
}

func cmpTimeThenID(a, b time.Time, x, y string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

func (s *Session) info(idle time.Duration) SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked(idle)
}

func (s *Session) infoLocked(idle time.Duration) SessionInfo {
	i := SessionInfo{ID: s.ID, Sandbox: s.Sandbox, Instance: s.Instance, Command: s.Command, TTY: s.TTY,
		Status: "running", Started: s.Started, OutputBytes: s.offset, DroppedBytes: s.dropped, Idle: idle,
		StdinClosed: s.stdinClose || s.exit != nil}
	if s.exit != nil {
		x := *s.exit
		i.Exit, i.Status = &x, "exited"
		if x.Reason != "exited" {
			i.Status = "ended"
		}
	}
	return i
}

func newSessionID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "sess_" + hex.EncodeToString(b)
}
