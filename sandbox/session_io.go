package sandbox

import (
	"context"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// A session's streams: the bounded output its readers take by cursor,
// the stdin queue its writers fill, and the signals sent to its command.

// Read returns the output after cursor, at most maxBytes of it (zero:
// DefaultSessionRead), waiting up to wait (at most MaxSessionWait) for
// some when there is none yet.
func (ss *Sessions) Read(ctx context.Context, may Scope, id string, cursor int64, maxBytes int, wait time.Duration) (
	SessionOutput, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSessionRead
	}
	maxBytes = min(maxBytes, MaxSessionRead)
	wait = min(max(wait, 0), MaxSessionWait)
	s, err := ss.get(may, id)
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
func (ss *Sessions) Write(may Scope, id string, data []byte, closeStdin bool) (SessionInfo, error) {
	s, err := ss.get(may, id)
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
func (ss *Sessions) Signal(may Scope, id string, sig drivers.Signal) (SessionInfo, string, error) {
	if !slices.Contains(SessionSignals, sig) {
		return SessionInfo{}, "", coded.New(coded.InvalidArguments,
			map[string]any{"field": "signal", "allowed": SessionSignals},
			"signal must be one of %v, not %q", SessionSignals, coded.Clip(string(sig)))
	}
	s, err := ss.get(may, id)
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
