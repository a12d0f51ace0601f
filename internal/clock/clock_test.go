package clock

import (
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
