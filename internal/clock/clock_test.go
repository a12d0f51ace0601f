package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFakeTimersAndTickers(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	timer := f.NewTimer(10 * time.Second)
	ticker := f.NewTicker(3 * time.Second)
	after := f.After(5 * time.Second)
	f.Advance(4 * time.Second)
	if fired(timer.C()) || fired(after) || !fired(ticker.C()) {
		t.Fatal("at 4 s only the ticker should have fired")
	}
	f.Advance(2 * time.Second) // 6 s: after fires, ticker ticks again (6 s)
	if !fired(after) || !fired(ticker.C()) || fired(timer.C()) {
		t.Fatal("at 6 s after and the ticker should have fired")
	}
	if !timer.Reset(time.Second) || fired(timer.C()) {
		t.Fatal("reset of a pending timer")
	}
	f.Advance(time.Second)
	if !fired(timer.C()) || timer.Stop() {
		t.Fatal("the reset timer did not fire once")
	}
	ticker.Stop()
	f.Advance(time.Hour)
	if fired(ticker.C()) || f.Waiters() != 0 {
		t.Fatalf("a stopped ticker fired, or waiters remain: %d", f.Waiters())
	}
}

// WithTimeout's context ends when its clock passes the timeout, with the
// deadline as its cause, and not before.
func TestWithTimeoutEndsOnItsClock(t *testing.T) {
	f := NewFake(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	ctx, cancel := WithTimeout(context.Background(), f, time.Second)
	defer cancel()
	for f.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	f.Advance(999 * time.Millisecond)
	select {
	case <-ctx.Done():
		t.Fatal("ended before its timeout")
	case <-time.After(20 * time.Millisecond):
	}
	f.Advance(time.Millisecond)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Errorf("cause %v, want the deadline", context.Cause(ctx))
	}
	ctx, cancel = WithTimeout(context.Background(), f, time.Second)
	cancel()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Errorf("cancelled: cause %v", context.Cause(ctx))
	}
}
