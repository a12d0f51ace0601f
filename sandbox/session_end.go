package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// How sessions end when sbf ends them: idle, with their sandbox, with the
// server, or closed (session.go).

// sweeper ends idle sessions and those whose sandbox has ended, until
// the table is empty (the next Start starts it again). It outlives the
// call whose Start began it, so ctx is that call's without its end
// (context.WithoutCancel): its values, not its deadline.
func (ss *Sessions) sweeper(ctx context.Context) {
	every := min(max(ss.idle()/4, time.Second), sessionLiveEvery)
	t := ss.Clock.NewTicker(every)
	defer t.Stop()
	for range t.C() {
		ss.Sweep(ctx)
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

// EndAll ends every session, all at once (each may wait for its backend),
// when the server that holds them stops: a session is memory only, so its
// command must not outlive it.
func (ss *Sessions) EndAll(why string) {
	ss.mu.Lock()
	all := make([]*Session, 0, len(ss.live))
	for _, s := range ss.live {
		all = append(all, s)
	}
	ss.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { ss.end(s, EndServer, why) })
	}
	wg.Wait()
}

// end stops a session's command, forgets the session and remembers why.
func (ss *Sessions) end(s *Session, reason, why string) SessionInfo {
	ss.mu.Lock()
	if ss.live[s.ID] == s {
		delete(ss.live, s.ID)
		if ss.ended == nil {
			ss.ended = map[string]endedSession{}
		}
		ss.ended[s.ID] = endedSession{why: why, workspace: s.Workspace}
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
