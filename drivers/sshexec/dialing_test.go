package sshexec

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/internal/clock"
)

// silentGuest accepts connections and never says a word.
func silentGuest(t *testing.T) (host, port string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	host, port, _ = net.SplitHostPort(l.Addr().String())
	return host, port
}

// A guest that accepts the connection and then says nothing holds a dial
// only as long as its caller's context, and at most handshakeFor: a loop's
// warm-up never hangs.
func TestAHandshakeEndsWithItsContextOrItsBound(t *testing.T) {
	host, port := silentGuest(t)
	key := sshtest.Start(t).KeyFile
	target := Target{Host: host, Port: port, User: "tester", IdentityFiles: []string{key}}
	dialed := func(ctx context.Context, c clock.Clock) chan error {
		done := make(chan error, 1)
		go func() { _, err := dialOnce(ctx, target, c); done <- err }()
		return done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	select {
	case err := <-dialed(ctx, clock.Real{}):
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("dial of a silent guest: %v; want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial of a silent guest outlived its context")
	}
	fake := clock.NewFake(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	done := dialed(context.Background(), fake)
	for fake.Waiters() == 0 { // the handshake's bound, set once connected
		time.Sleep(time.Millisecond)
	}
	fake.Advance(handshakeFor)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within") {
			t.Errorf("dial of a silent guest past the bound: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial of a silent guest outlived its bound")
	}
}

// sharedDial is a pool whose dials wait for release, counting each.
func sharedDial(t *testing.T, target func() (Target, error)) (*Pool, *atomic.Int32, chan struct{}, chan struct{}) {
	var targets atomic.Int32
	asked, release := make(chan struct{}, 4), make(chan struct{})
	p := New(Options{Target: func(ctx context.Context, _ string) (Target, error) {
		targets.Add(1)
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return Target{}, ctx.Err()
		}
		return target()
	}})
	t.Cleanup(func() { p.Close() })
	return p, &targets, asked, release
}

// A dial's failure is every waiter's (they do not each try again in
// turn), unless the dial ended for its own caller's reasons: then a
// waiter dials itself.
func TestWaitersShareAFailureButNotACancellation(t *testing.T) {
	refused := errors.New("no such instance")
	p, targets, asked, release := sharedDial(t, func() (Target, error) { return Target{}, refused })
	errs := make(chan error, 2)
	go func() { errs <- p.Connect(context.Background(), instance) }()
	<-asked
	go func() { errs <- p.Connect(context.Background(), instance) }()
	time.Sleep(100 * time.Millisecond) // the second caller is waiting by now
	close(release)
	for range 2 {
		if err := <-errs; !errors.Is(err, refused) {
			t.Errorf("a caller got %v; want the dial's own failure", err)
		}
	}
	if targets.Load() != 1 {
		t.Errorf("%d dials for one failure; want 1", targets.Load())
	}

	g := sshtest.Start(t)
	q, qTargets, qAsked, qRelease := sharedDial(t, func() (Target, error) {
		return Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{g.KeyFile}}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- q.Connect(ctx, instance) }()
	<-qAsked
	second := make(chan error, 1)
	go func() { second <- q.Connect(context.Background(), instance) }()
	time.Sleep(100 * time.Millisecond)
	cancel() // the first caller gives up; the second must not fail for it
	<-qAsked // the second dials itself
	close(qRelease)
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled caller: %v", err)
	}
	if err := <-second; err != nil || qTargets.Load() != 2 || !q.Alive(instance) {
		t.Errorf("the waiter after a cancelled dial: %v, %d dials, alive %v", err, qTargets.Load(), q.Alive(instance))
	}
}

// A connection whose instance was dropped while it was dialled (stopped
// meanwhile) is closed, not kept for the next command.
func TestADialDroppedMeanwhileIsNotKept(t *testing.T) {
	g := sshtest.Start(t)
	p, _, asked, release := sharedDial(t, func() (Target, error) {
		return Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{g.KeyFile}}, nil
	})
	done := make(chan error, 1)
	go func() { done <- p.Connect(context.Background(), instance) }()
	<-asked
	p.Drop(instance)
	close(release)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("a dial dropped meanwhile: %v; want it refused", err)
	}
	if p.Alive(instance) {
		t.Error("the dropped instance's connection was kept")
	}
}
