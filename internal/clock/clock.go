// Package clock is the only source of time below cmd/: code takes a Clock
// so tests (and SBF_NOW) decide what "now" is and when timers fire. Code
// that must wait in real time whatever "now" is (another process holding
// a lock, a network keepalive) says so by using Real explicitly.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// After fires once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
	// NewTimer fires once d has passed; it can be stopped and reset.
	NewTimer(d time.Duration) Timer
	// NewTicker fires every d until stopped.
	NewTicker(d time.Duration) Ticker
}

// Timer is a time.Timer on some clock.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker on some clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (Real) NewTicker(d time.Duration) Ticker       { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Fixed always reports the same instant (SBF_NOW) but waits in real time,
// so simulated latencies and loop intervals still pass.
type Fixed struct{ T time.Time }

func (f Fixed) Now() time.Time                       { return f.T }
func (Fixed) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Fixed) NewTimer(d time.Duration) Timer         { return Real{}.NewTimer(d) }
func (Fixed) NewTicker(d time.Duration) Ticker       { return Real{}.NewTicker(d) }

// Sleep waits d on c, or until ctx ends.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithTimeout is context.WithTimeout on c: the context ends when c's timer
// of d fires (its cause context.DeadlineExceeded), when ctx ends, or when
// cancelled.
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := c.NewTimer(d)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel(context.DeadlineExceeded)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Fake is a clock tests move by hand; timers fire when Advance passes
// them.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer
}

// fakeTimer is a pending After, Timer or Ticker (period > 0) of a Fake.
type fakeTimer struct {
	f      *Fake
	at     time.Time
	period time.Duration
	ch     chan time.Time
}

// NewFake starts a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

func (f *Fake) NewTimer(d time.Duration) Timer { return f.add(d, 0) }

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	return fakeTicker{f.add(d, d)}
}

type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) C() <-chan time.Time { return t.t.ch }
func (t fakeTicker) Stop()               { t.t.Stop() }

func (f *Fake) add(d, period time.Duration) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), period: period, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- f.now
		return t
	}
	f.waiters = append(f.waiters, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop reports whether the timer was pending.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.remove(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	pending := t.f.remove(t)
	t.at = t.f.now.Add(d)
	t.f.waiters = append(t.f.waiters, t)
	return pending
}

func (f *Fake) remove(t *fakeTimer) bool {
	for i, w := range f.waiters {
		if w == t {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock forward and fires every timer it passes; a
// ticker fires once (its channel holds one tick, as time.Ticker's does)
// and is re-armed for its next period.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at.After(f.now) {
			kept = append(kept, w)
			continue
		}
		select {
		case w.ch <- f.now:
		default: // a tick nobody read yet
		}
		if w.period > 0 {
			for !w.at.After(f.now) {
				w.at = w.at.Add(w.period)
			}
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

// Waiters reports how many timers are pending, so a test can wait until
// the code under test is asleep before advancing.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}
