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
	DefaultMaxSessions  = 16
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

// SessionSignals are the signals a session's command may be sent.
var SessionSignals = []drivers.Signal{"INT", "TERM", "KILL", "HUP", "QUIT", "USR1", "USR2"}

// Why a session ended, when sbf ended it rather than its command.
const (
	EndClosed       = "closed"
	EndIdle         = "idle"
	EndSandbox      = "sandbox_ended"
	EndTimedOut     = "timed_out"
	EndCommandError = "error"
)

// Sessions is one server's table of exec sessions.
type Sessions struct {
	Clock clock.Clock
	// Idle is how long a session may go without a call before it ends
	// (zero: DefaultSessionIdle).
	Idle time.Duration
	// Max is how many sessions may be open at once (zero:
	// DefaultMaxSessions).
	Max int

	mu       sync.Mutex
	live     map[string]*Session
	ended    map[string]string // recently ended id → why, so a late call says why it is gone
	order    []string
	sweeping bool
}

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
	Command  string
	TTY      bool
	Started  time.Time

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
	// ended it (EndClosed, EndIdle, EndSandbox, EndTimedOut, EndCommandError).
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
	s := &Session{ID: newSessionID(), Sandbox: tgt.Sandbox, Instance: tgt.Instance, Command: command, TTY: req.TTY,
		Started: now, cancel: cancel, signals: make(chan drivers.Signal, sessionSignalBuffer), stdinR: r, stdinW: w,
		finished: make(chan struct{}), wake: make(chan struct{}, 1), maxKept: tgt.MaxOutput, alive: req.Alive,
		notify: make(chan struct{}), lastUse: now, lastLive: now}
	if s.maxKept <= 0 {
		s.maxKept = policy.DefaultMaxOutputBytes
	}
	if err := ss.admit(s); err != nil {
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

// admit adds a session to the table unless the table is full.
func (ss *Sessions) admit(s *Session) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.live) >= ss.max() {
		return coded.New(CodeSessionLimit, map[string]any{"max_sessions": ss.max(), "open": len(ss.live)},
			"%d exec sessions are open, the most this server allows; close one with close_session "+
				"(or let an idle one end after %s) and start again", len(ss.live), ss.idle())
	}
	if ss.live == nil {
		ss.live = map[string]*Session{}
	}
	ss.live[s.ID] = s
	if !ss.sweeping {
		ss.sweeping = true
		go ss.sweeper()
	}
	return nil
}

// sweeper ends idle sessions and those whose sandbox has ended, until
// the table is empty (the next Start starts it again).
func (ss *Sessions) sweeper() {
	every := min(max(ss.idle()/4, time.Second), sessionLiveEvery)
	t := ss.Clock.NewTicker(every)
	defer t.Stop()
	for range t.C() {
		ss.Sweep(context.Background())
		ss.mu.Lock()
		if len(ss.live) == 0 {
			ss.sweeping = false
			ss.mu.Unlock()
			return
		}
		ss.mu.Unlock()
	}
}

// Sweep ends every session idle for the idle time, and every session
// whose sandbox's lease or VM has ended (checked every 15 s).
func (ss *Sessions) Sweep(ctx context.Context) {
	now := ss.Clock.Now()
	ss.mu.Lock()
	var idle, check []*Session
	for _, s := range ss.live {
		s.mu.Lock()
		switch {
		case now.Sub(s.lastUse) >= ss.idle():
			idle = append(idle, s)
		case s.alive != nil && s.exit == nil && now.Sub(s.lastLive) >= sessionLiveEvery:
			s.lastLive = now
			check = append(check, s)
		}
		s.mu.Unlock()
	}
	ss.mu.Unlock()
	for _, s := range idle {
		ss.end(s, EndIdle, fmt.Sprintf("it was idle for %s", ss.idle()))
	}
	for _, s := range check {
		if err := s.alive(ctx); err != nil {
			ss.end(s, EndSandbox, "its sandbox ended: "+err.Error())
		}
	}
}

// EndInstance ends every session in an instance (its sandbox was
// destroyed).
func (ss *Sessions) EndInstance(instance, why string) {
	ss.mu.Lock()
	var gone []*Session
	for _, s := range ss.live {
		if s.Instance == instance {
			gone = append(gone, s)
		}
	}
	ss.mu.Unlock()
	for _, s := range gone {
		ss.end(s, EndSandbox, why)
	}
}

// end stops a session's command, forgets the session and remembers why.
func (ss *Sessions) end(s *Session, reason, why string) SessionInfo {
	ss.mu.Lock()
	if ss.live[s.ID] == s {
		delete(ss.live, s.ID)
		if ss.ended == nil {
			ss.ended = map[string]string{}
		}
		ss.ended[s.ID] = why
		ss.order = append(ss.order, s.ID)
		if len(ss.order) > rememberEndedFor {
			delete(ss.ended, ss.order[0])
			ss.order = ss.order[1:]
		}
	}
	ss.mu.Unlock()
	s.mu.Lock()
	if s.endWhy == "" {
		s.endWhy = reason
	}
	s.mu.Unlock()
	s.cancel()
	s.closeStdin()
	select {
	case <-s.finished:
	case <-ss.Clock.After(sessionCloseWait):
		// The backend did not return yet; its command was told to end, and
		// the session is gone from the table either way.
	}
	return s.info(ss.idle())
}

// get finds a live session and records the call as activity.
func (ss *Sessions) get(id string) (*Session, error) {
	ss.mu.Lock()
	s, ok := ss.live[id]
	why, ended := ss.ended[id]
	ss.mu.Unlock()
	if !ok {
		details := map[string]any{"session_id": id}
		if ended {
			details["ended"] = why
			return nil, coded.New(CodeSessionNotFound, details,
				"session %s has ended (%s); start a new one with start_session", coded.Clip(id), why)
		}
		return nil, coded.New(CodeSessionNotFound, details,
			"no session %s on this server; start one with start_session", coded.Clip(id))
	}
	s.mu.Lock()
	s.lastUse = ss.Clock.Now()
	s.mu.Unlock()
	return s, nil
}

// Read returns the output after cursor, at most maxBytes of it (zero:
// DefaultSessionRead), waiting up to wait (at most MaxSessionWait) for
// some when there is none yet.
func (ss *Sessions) Read(ctx context.Context, id string, cursor int64, maxBytes int, wait time.Duration) (
	SessionOutput, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSessionRead
	}
	maxBytes = min(maxBytes, MaxSessionRead)
	wait = min(max(wait, 0), MaxSessionWait)
	s, err := ss.get(id)
	if err != nil {
		return SessionOutput{}, err
	}
	if cursor < 0 {
		return SessionOutput{}, coded.New(coded.InvalidArguments, map[string]any{"field": "cursor"},
			"cursor cannot be negative; start from 0")
	}
	var timer clock.Timer
	for {
		out, more, err := s.collect(cursor, maxBytes, ss.idle())
		if err != nil || len(out.Events) > 0 || out.Done || out.Missed > 0 || wait == 0 {
			return out, err
		}
		if timer == nil {
			timer = ss.Clock.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-more:
		case <-timer.C():
			wait = 0
		case <-ctx.Done():
			wait = 0
		}
	}
}

// collect is the output after cursor; more is closed when there is more.
func (s *Session) collect(cursor int64, maxBytes int, idle time.Duration) (SessionOutput, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cursor > s.offset {
		return SessionOutput{}, nil, coded.New(coded.InvalidArguments,
			map[string]any{"field": "cursor", "output_bytes": s.offset},
			"cursor %d is past the %d bytes the command printed; pass the next_cursor of the last read", cursor,
			s.offset)
	}
	out := SessionOutput{SessionInfo: s.infoLocked(idle), Cursor: cursor}
	at := cursor
	if at < s.first {
		out.Missed, at = s.first-at, s.first
	}
	budget := int64(maxBytes)
	i, _ := slices.BinarySearchFunc(s.events, at, func(e SessionEvent, at int64) int {
		if e.Offset+int64(len(e.Data)) <= at {
			return -1
		}
		if e.Offset > at {
			return 1
		}
		return 0
	})
	for ; i < len(s.events) && budget > 0; i++ {
		e := s.events[i]
		data := e.Data[at-e.Offset:]
		if int64(len(data)) > budget {
			data = data[:budget]
		}
		// A copy: the held event may grow while the door renders this one.
		e.Offset, e.Data = at, slices.Clone(data)
		out.Events = append(out.Events, e)
		at += int64(len(data))
		budget -= int64(len(data))
	}
	out.NextCursor = at
	out.Done = s.exit != nil && at == s.offset
	return out, s.notify, nil
}

// stream is one of a session's output streams.
type stream struct {
	s    *Session
	name string
}

func (w stream) Write(p []byte) (int, error) {
	w.s.append(w.name, p)
	return len(p), nil
}

// append keeps output, dropping the oldest held when the session holds
// its ceiling. A write continuing the last event's stream joins it: the
// cursor is a byte offset, so a reader that read part of it loses nothing.
func (s *Session) append(name string, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 {
		n := len(p)
		if last := len(s.events) - 1; last >= 0 && s.events[last].Stream == name &&
			len(s.events[last].Data) < maxSessionEvent {
			n = min(n, maxSessionEvent-len(s.events[last].Data))
			s.events[last].Data = append(s.events[last].Data, p[:n]...)
		} else {
			n = min(n, maxSessionEvent)
			s.seq++
			s.events = append(s.events, SessionEvent{Seq: s.seq, Stream: name, Offset: s.offset,
				Data: slices.Clone(p[:n])})
			s.kept += eventOverhead
		}
		s.offset += int64(n)
		s.kept += int64(n)
		p = p[n:]
	}
	for s.kept > s.maxKept && len(s.events) > 1 {
		e := s.events[0]
		s.kept -= int64(len(e.Data)) + eventOverhead
		s.dropped += int64(len(e.Data))
		s.events[0] = SessionEvent{}
		s.events = s.events[1:]
	}
	if over := s.kept - s.maxKept; over > 0 && len(s.events) == 1 {
		// One event larger than the ceiling keeps its newest bytes.
		e := &s.events[0]
		e.Data = slices.Clone(e.Data[over:])
		e.Offset += over
		s.kept -= over
		s.dropped += over
	}
	if len(s.events) > 0 {
		s.first = s.events[0].Offset
	}
	s.wakeReaders()
}

func (s *Session) wakeReaders() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// finish records the command's end.
func (s *Session) finish(code int, timedOut bool, err error, now time.Time) {
	s.closeStdin()
	s.mu.Lock()
	x := &SessionExit{Code: code, TimedOut: timedOut, Reason: "exited", At: now}
	switch {
	case s.endWhy != "":
		x.Reason, x.Code = s.endWhy, -1
	case timedOut:
		x.Reason = EndTimedOut
	case err != nil:
		x.Reason, x.Code, x.Error = EndCommandError, -1, coded.Clip(err.Error())
	}
	s.exit = x
	s.wakeReaders()
	s.mu.Unlock()
	close(s.finished)
	s.stdinR.Close()
}

// deadline ends a terminal session at its timeout (an exec's backend
// enforces its own).
func (s *Session) deadline(c clock.Clock, d time.Duration) {
	select {
	case <-c.After(d):
		s.mu.Lock()
		if s.endWhy == "" {
			s.endWhy = EndTimedOut
		}
		s.mu.Unlock()
		s.cancel()
	case <-s.finished:
	}
}

// Write queues input for the command's stdin, and with closeStdin ends
// it after that input. The input is written in the background: a command
// that does not read its stdin does not hold the call, but at most 1 MiB
// waits for it.
func (ss *Sessions) Write(id string, data []byte, closeStdin bool) (SessionInfo, error) {
	s, err := ss.get(id)
	if err != nil {
		return SessionInfo{}, err
	}
	if err := s.queue(data, closeStdin); err != nil {
		return SessionInfo{}, err
	}
	return s.info(ss.idle()), nil
}

func (s *Session) queue(data []byte, closeStdin bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	details := map[string]any{"session_id": s.ID}
	switch {
	case s.exit != nil:
		return coded.New(CodeSessionEnded, details, "the session's command has ended (%s); read its output "+
			"with read_session and close it with close_session", s.exit.Reason)
	case s.stdinClose || s.stdinErr != nil:
		return coded.New(CodeSessionEnded, details, "the session's stdin is closed; start a new session to "+
			"give a command more input")
	case s.stdinQueued+len(data) > maxSessionStdin:
		details["queued_bytes"], details["max_queued_bytes"] = s.stdinQueued, maxSessionStdin
		return coded.New(CodeSessionStdin, details, "%d bytes of input wait for the command to read them; "+
			"read its output (it may be waiting for you) and write again", s.stdinQueued)
	}
	if len(data) > 0 {
		s.stdinQ = append(s.stdinQ, slices.Clone(data))
		s.stdinQueued += len(data)
	}
	s.stdinClose = closeStdin
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// pump writes queued input to the command's stdin until it is closed or
// the command ends.
func (s *Session) pump() {
	for {
		s.mu.Lock()
		var next []byte
		if len(s.stdinQ) > 0 {
			next = s.stdinQ[0]
			s.stdinQ[0] = nil
			s.stdinQ = s.stdinQ[1:]
		}
		closing := s.stdinClose && next == nil
		s.mu.Unlock()
		switch {
		case next != nil:
			_, err := s.stdinW.Write(next)
			s.mu.Lock()
			s.stdinQueued -= len(next)
			if err != nil && s.stdinErr == nil {
				s.stdinErr = err
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
			continue
		case closing:
			s.closeStdin()
			return
		}
		select {
		case <-s.wake:
		case <-s.finished:
			return
		}
	}
}

func (s *Session) closeStdin() { s.closeW.Do(func() { s.stdinW.Close() }) }

// Signal sends a signal to every process of the session's command. On a
// terminal, INT and QUIT are typed (Ctrl-C, Ctrl-\) as a person would;
// the other signals end the command.
func (ss *Sessions) Signal(id string, sig drivers.Signal) (SessionInfo, string, error) {
	if !slices.Contains(SessionSignals, sig) {
		return SessionInfo{}, "", coded.New(coded.InvalidArguments,
			map[string]any{"field": "signal", "allowed": SessionSignals},
			"signal must be one of %v, not %q", SessionSignals, coded.Clip(string(sig)))
	}
	s, err := ss.get(id)
	if err != nil {
		return SessionInfo{}, "", err
	}
	s.mu.Lock()
	exited := s.exit != nil
	s.mu.Unlock()
	if exited {
		return SessionInfo{}, "", coded.New(CodeSessionEnded, map[string]any{"session_id": id},
			"the session's command has ended; read its output and close the session")
	}
	how := "signal"
	switch {
	case !s.TTY:
		select {
		case s.signals <- sig:
		default:
			return SessionInfo{}, "", coded.New(CodeSessionStdin, map[string]any{"session_id": id},
				"%d signals are still being delivered; read the session's output and try again",
				sessionSignalBuffer)
		}
	case sig == "INT" || sig == "QUIT":
		key := map[drivers.Signal]string{"INT": "\x03", "QUIT": "\x1c"}[sig]
		if err := s.queue([]byte(key), false); err != nil {
			return SessionInfo{}, "", err
		}
		how = "typed"
	default:
		s.mu.Lock()
		if s.endWhy == "" {
			s.endWhy = "signal " + string(sig)
		}
		s.mu.Unlock()
		s.cancel()
		how = "ended"
	}
	return s.info(ss.idle()), how, nil
}

// Close ends the session's command if it still runs and forgets the
// session; its output is gone with it.
func (ss *Sessions) Close(id string) (SessionInfo, error) {
	s, err := ss.get(id)
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
