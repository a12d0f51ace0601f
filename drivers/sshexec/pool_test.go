package sshexec

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/internal/clock"
)

// unreachable is a pool whose targets cannot be found, as when a VM is not
// running.
func unreachable(fb Fallbacks, clk clock.Clock) *Pool {
	return New(Options{
		Target:    func(context.Context, string) (Target, error) { return Target{}, errNotRunning },
		Fallbacks: fb, Clock: clk,
	})
}

var errNotRunning = errors.New("instance is Stopped, not running")

func TestFallbacksGetTheSSHError(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls []string
	p := unreachable(Fallbacks{
		Exec: func(_ context.Context, instance string, req drivers.ExecRequest, sshErr error) (drivers.ExecResult,
			error) {
			calls = append(calls, "exec "+instance+" "+req.Command+": "+sshErr.Error())
			clk.Advance(3 * time.Second)
			return drivers.ExecResult{Via: "other", ExitCode: 5}, nil
		},
		CopyIn: func(_ context.Context, instance, local, remote string, sshErr error) error {
			calls = append(calls, "in "+local+" "+instance+":"+remote+": "+sshErr.Error())
			return nil
		},
	}, clk)
	ctx := context.Background()
	res, err := p.Exec(ctx, "vm", drivers.ExecRequest{Command: "true"})
	if err != nil || res.Via != "other" || res.ExitCode != 5 || res.Duration != 3*time.Second ||
		res.DurationMS != 3000 {
		t.Errorf("exec = %+v, %v; want the fallback's result, timed on the pool's clock", res, err)
	}
	if err := p.CopyIn(ctx, "vm", "/here", "/there"); err != nil {
		t.Errorf("copy in: %v", err)
	}
	if err := p.GetArchive(ctx, "vm", "/there", io.Discard); !errors.Is(err, errNotRunning) {
		t.Errorf("archive out: %v; want the SSH error (guest data has no way to the host but the engine's)", err)
	}
	want := []string{
		"exec vm true: " + errNotRunning.Error(),
		"in /here vm:/there: " + errNotRunning.Error(),
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("fallback calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}

func TestWithoutFallbacksTheSSHErrorIsReturned(t *testing.T) {
	p := unreachable(Fallbacks{}, nil)
	ctx := context.Background()
	if _, err := p.Exec(ctx, "vm", drivers.ExecRequest{Command: "true"}); !errors.Is(err, errNotRunning) {
		t.Errorf("exec: %v", err)
	}
	if err := p.CopyIn(ctx, "vm", "/here", "/there"); !errors.Is(err, errNotRunning) {
		t.Errorf("copy in: %v", err)
	}
	if err := p.GetArchive(ctx, "vm", "/there", io.Discard); !errors.Is(err, errNotRunning) {
		t.Errorf("archive out: %v", err)
	}
}

func TestACancelledExecDoesNotFallBack(t *testing.T) {
	p := unreachable(Fallbacks{Exec: func(context.Context, string, drivers.ExecRequest, error) (drivers.ExecResult,
		error) {
		t.Error("the fallback ran a command nobody waits for")
		return drivers.ExecResult{}, nil
	}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Exec(ctx, "vm", drivers.ExecRequest{Command: "true"}); err == nil {
		t.Error("a cancelled exec succeeded")
	}
}

func TestAliveNeverDials(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	if p.Alive(instance) || g.Connections.Load() != 0 {
		t.Fatalf("alive before any command, %d connections", g.Connections.Load())
	}
	if _, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true"}); err != nil {
		t.Fatal(err)
	}
	if !p.Alive(instance) {
		t.Error("not alive with an open connection")
	}
	p.Drop(instance)
	if p.Alive(instance) {
		t.Error("alive after Drop")
	}
	p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true"})
	p.Close()
	if p.Alive(instance) || g.Connections.Load() != 2 {
		t.Errorf("alive after Close, or %d connections; want 2", g.Connections.Load())
	}
}

// Warm opens the connection and the guest shell ahead of the first
// command, which then opens neither.
func TestWarmOpensWhatTheFirstCommandNeeds(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	if err := p.Warm(context.Background(), instance); err != nil {
		t.Fatal(err)
	}
	conns, sessions := g.Connections.Load(), g.Sessions.Load()
	if conns != 1 || sessions != 1 || !p.Alive(instance) {
		t.Fatalf("after Warm: %d connections, %d sessions", conns, sessions)
	}
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo hi"})
	if err != nil || res.Stdout != "hi\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	if g.Connections.Load() != conns || g.Sessions.Load() != sessions {
		t.Errorf("the first command dialled or opened a session: %d connections, %d sessions",
			g.Connections.Load(), g.Sessions.Load())
	}
}

// A guest that resets the first connections (its sshd restarting) is
// dialled again; one that keeps resetting fails with the reset.
func TestADialTheGuestResetsIsTriedAgain(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	g.ResetFirst.Store(2)
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo up"})
	if err != nil || res.Stdout != "up\n" || g.Connections.Load() != 3 {
		t.Fatalf("exec after two resets = %+v, %v (%d connections); want it run on the third",
			res, err, g.Connections.Load())
	}
	p.Close()
	g.ResetFirst.Store(100)
	patience := redialFor
	redialFor = 3 * redialFirst // two pauses: 250 ms, 500 ms
	t.Cleanup(func() { redialFor = patience })
	before := g.Connections.Load()
	if _, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true"}); err == nil ||
		!droppedEarly(err) || g.Connections.Load()-before != 3 {
		t.Errorf("exec against a guest that keeps resetting: %v after %d connections; want the reset, 3 tries",
			err, g.Connections.Load()-before)
	}
}

// Connecting waits longer than a command for a guest that has just come up
// and drops the first connections (a fork child resumed from memory).
func TestConnectingWaitsLongerForAGuestComingUp(t *testing.T) {
	patience, warm := redialFor, warmPatience
	redialFor, warmPatience = 3*redialFirst, 10*redialFirst // a command tries 3 times; connecting, 4
	t.Cleanup(func() { redialFor, warmPatience = patience, warm })
	p, g := guest(t, Fallbacks{})
	g.ResetFirst.Store(5)
	if _, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true"}); err == nil {
		t.Fatalf("a command dialled past %d resets with %s of patience", 5, redialFor)
	}
	if err := p.Connect(context.Background(), instance); err != nil || g.Connections.Load() != 6 {
		t.Fatalf("connecting after the command's 3 tries = %v (%d connections); want it up on the 6th",
			err, g.Connections.Load())
	}
}

// The pauses between dials start short and grow to a second, and fit the
// patience they are given.
func TestRedialPausesGrowToASecondWithinThePatience(t *testing.T) {
	for _, c := range []struct {
		patience time.Duration
		want     []time.Duration
	}{
		{0, nil},
		{750 * time.Millisecond, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}},
		{4 * time.Second, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second,
			time.Second}},
	} {
		if got := redialWaits(c.patience); !slices.Equal(got, c.want) {
			t.Errorf("redialWaits(%s) = %v; want %v", c.patience, got, c.want)
		}
	}
	if n := len(redialWaits(warmPatience)); n < 25 {
		t.Errorf("a warm-up tries %d times in %s; want a try about every second", n+1, warmPatience)
	}
}

// A loop warming a spare while a create adopts it: the second caller
// waits for the dial in flight instead of opening a connection of its own.
func TestCallersShareTheDialInFlight(t *testing.T) {
	g := sshtest.Start(t)
	var targets atomic.Int32
	asked, release := make(chan struct{}, 2), make(chan struct{})
	p := New(Options{Target: func(context.Context, string) (Target, error) {
		targets.Add(1)
		asked <- struct{}{}
		<-release
		return Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{g.KeyFile}}, nil
	}})
	t.Cleanup(func() { p.Close() })
	errs := make(chan error, 2)
	go func() { errs <- p.Warm(context.Background(), instance) }()
	<-asked
	go func() { errs <- p.Warm(context.Background(), instance) }()
	select {
	case <-asked: // the second caller dialled too; release both so the test ends
		close(release)
		t.Fatal("a second dial began while the first was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if targets.Load() != 1 || g.Connections.Load() != 1 || p.Dials() != 1 {
		t.Errorf("%d targets asked, %d connections, %d dials; want one of each", targets.Load(),
			g.Connections.Load(), p.Dials())
	}
}
