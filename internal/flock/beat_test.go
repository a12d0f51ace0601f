package flock

import (
	"context"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/progress"
)

// lines collects what a wait reports, as a door's listener would.
type lines struct {
	mu   sync.Mutex
	got  []string
	news chan struct{}
}

func newLines() *lines { return &lines{news: make(chan struct{}, 16)} }

func (l *lines) add(msg string) {
	l.mu.Lock()
	l.got = append(l.got, msg)
	l.mu.Unlock()
	l.news <- struct{}{}
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// useFakeBeat paces waits' lines on a fake clock for one test.
func useFakeBeat(t *testing.T) *clock.Fake {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	beatClock = fake
	t.Cleanup(func() { beatClock = clock.Real{} })
	return fake
}

// advanceWhenWaiting moves the fake clock on by d once the wait's beat is
// armed, and waits for the line it writes.
func advanceWhenWaiting(t *testing.T, fake *clock.Fake, got *lines, d time.Duration) string {
	t.Helper()
	for fake.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	fake.Advance(d)
	select {
	case <-got.news:
	case <-time.After(time.Minute): // a guard against a hang, not a measure of speed
		t.Fatalf("no line after %s of waiting; lines so far: %q", d, got.all())
	}
	all := got.all()
	return all[len(all)-1]
}

// A process waiting for a lock another sbf holds says so, naming the lock
// and its holder, at every progress.Every, and nothing before the first.
func TestAWaitForALockNamesItAndItsHolderAtEveryBeat(t *testing.T) {
	fake := useFakeBeat(t)
	path := filepath.Join(t.TempDir(), "images.lock")
	held, err := Acquire(context.Background(), ownfile.PathFile(path), Holder{Command: "sbf image build", PID: 41}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := newLines()
	ctx := progress.WithListener(context.Background(), got.add)
	done := make(chan error, 1)
	go func() {
		l, err := Acquire(ctx, ownfile.PathFile(path), Holder{Command: "second"}, time.Hour)
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	for i, want := range []string{"(15s so far)", "(30s so far)"} {
		line := advanceWhenWaiting(t, fake, got, progress.Every)
		if !strings.Contains(line, "waiting for the lock "+path) || !strings.Contains(line, `"sbf image build" (pid 41`) ||
			!strings.HasSuffix(line, want) {
			t.Errorf("line %d: %q", i+1, line)
		}
	}
	held.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(got.all()); n != 2 {
		t.Errorf("%d lines, want one per beat: %q", n, got.all())
	}
}

// Waiting for a sandbox another run holds (WaitFree) says so too.
func TestWaitFreeNamesWhatItWaitsFor(t *testing.T) {
	fake := useFakeBeat(t)
	path := filepath.Join(t.TempDir(), "api.lock")
	held, err := Acquire(context.Background(), ownfile.PathFile(path), Holder{Command: "sbf apply", PID: 7}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := newLines()
	ctx := progress.WithListener(context.Background(), got.add)
	done := make(chan *Holder, 1)
	go func() { done <- WaitFree(ctx, ownfile.PathFile(path), time.Hour) }()
	if line := advanceWhenWaiting(t, fake, got, progress.Every); !strings.Contains(line, `held by "sbf apply" (pid 7`) {
		t.Errorf("line: %q", line)
	}
	held.Release()
	if who := <-done; who != nil {
		t.Errorf("WaitFree after the release: %+v", who)
	}
}
