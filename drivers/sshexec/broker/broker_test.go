package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

func serve(t *testing.T, idle time.Duration, exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult,
	error)) (string, chan error) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), ln, exec, idle, clock.Real{}) }()
	return sock, done
}

func TestBrokerRunsCommands(t *testing.T) {
	sock, _ := serve(t, time.Minute, func(_ context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
		res := drivers.ExecResult{ExitCode: 3, Stdout: "ran " + req.Command, Via: "ssh-shell"}
		if req.Stdin != nil {
			b, _ := io.ReadAll(req.Stdin)
			res.Stdout += " with " + string(b)
		}
		if req.Command == "fail" {
			return res, errors.New("guest gone")
		}
		return res, nil
	})
	ctx := context.Background()
	res, err := Exec(ctx, sock, drivers.ExecRequest{Command: "true"})
	if err != nil || res.Stdout != "ran true" || res.ExitCode != 3 || res.Via != "ssh-shell" {
		t.Errorf("no stdin: %+v %v", res, err)
	}
	res, err = Exec(ctx, sock, drivers.ExecRequest{Command: "cat", Stdin: strings.NewReader("input")})
	if err != nil || res.Stdout != "ran cat with input" {
		t.Errorf("stdin: %+v %v", res, err)
	}
	if _, err := Exec(ctx, sock, drivers.ExecRequest{Command: "fail"}); err == nil || err.Error() != "guest gone" {
		t.Errorf("error: %v", err)
	}
	if _, err := Exec(ctx, filepath.Join(t.TempDir(), "none.sock"),
		drivers.ExecRequest{Command: "true"}); !errors.Is(err, ErrNoBroker) {
		t.Errorf("no broker: %v", err)
	}
}

func TestClientGoingAwayCancelsTheCommand(t *testing.T) {
	cancelled := make(chan struct{})
	sock, _ := serve(t, time.Minute, func(ctx context.Context, _ drivers.ExecRequest) (drivers.ExecResult, error) {
		<-ctx.Done()
		close(cancelled)
		return drivers.ExecResult{}, ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	Exec(ctx, sock, drivers.ExecRequest{Command: "sleep 100"})
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the broker kept running a command nobody waits for")
	}
}

func TestBrokerExitsWhenIdle(t *testing.T) {
	sock, done := serve(t, 200*time.Millisecond, func(context.Context, drivers.ExecRequest) (drivers.ExecResult,
		error) {
		time.Sleep(300 * time.Millisecond) // longer than the idle time: must not count as idle
		return drivers.ExecResult{}, nil
	})
	if _, err := Exec(context.Background(), sock, drivers.ExecRequest{Command: "slow"}); err != nil {
		t.Fatalf("a command longer than the idle time was cut: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the broker did not exit when idle")
	}
}

// Output reaches the client while the command runs, and a signal reaches
// the command while it still has stdin to read.
func TestBrokerStreamsOutputAndPassesSignals(t *testing.T) {
	sock, _ := serve(t, time.Minute, func(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
		io.WriteString(req.StdoutTo, "started\n")
		io.WriteString(req.StderrTo, "warming\n")
		select {
		case sig := <-req.Signals:
			return drivers.ExecResult{ExitCode: 130, Stdout: "got " + string(sig)}, nil
		case <-ctx.Done():
			return drivers.ExecResult{}, ctx.Err()
		}
	})
	stdout, stderr := newWatched(), newWatched()
	signals := make(chan drivers.Signal, 1)
	stdinR, stdinW := io.Pipe() // stdin that never ends
	defer stdinW.Close()
	done := make(chan drivers.ExecResult, 1)
	go func() {
		res, err := Exec(context.Background(), sock, drivers.ExecRequest{Command: "x", Stdin: stdinR,
			StdoutTo: stdout, StderrTo: stderr, Signals: signals})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	stdout.waitFor(t, "started\n")
	stderr.waitFor(t, "warming\n")
	stdinW.Write([]byte("typed but never read\n"))
	signals <- "INT"
	select {
	case res := <-done:
		if res.ExitCode != 130 || res.Stdout != "got INT" {
			t.Errorf("result: %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the signal never reached the command")
	}
}

// watched is a writer a test can wait on.
type watched struct {
	mu   sync.Mutex
	b    strings.Builder
	more chan struct{}
}

func newWatched() *watched { return &watched{more: make(chan struct{}, 1)} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watched) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.After(5 * time.Second); ; {
		w.mu.Lock()
		got := w.b.String()
		w.mu.Unlock()
		if got == want {
			return
		}
		select {
		case <-w.more:
		case <-deadline:
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// A broker's refusals reach its client as they were made: a coded error
// keeps its code and details, a broker that no longer serves the sandbox
// reads as no broker (nothing ran), and only a client that asked has its
// command recorded.
func TestBrokerAnswersKeepWhatTheyMean(t *testing.T) {
	sock, _ := serve(t, time.Minute, func(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
		switch req.Command {
		case "ended":
			return drivers.ExecResult{}, fmt.Errorf("finding it: %w", coded.New(coded.InstanceTerminal,
				map[string]any{"status": "expired"}, "sandbox api is expired"))
		case "moved":
			return drivers.ExecResult{}, fmt.Errorf("%w: api is now another VM", ErrNoBroker)
		}
		return drivers.ExecResult{Stdout: fmt.Sprint(Recorded(ctx))}, nil
	})
	ctx := context.Background()
	_, err := Exec(ctx, sock, drivers.ExecRequest{Command: "ended"})
	c := (*coded.Error)(nil)
	if !errors.As(err, &c) || c.Code != coded.InstanceTerminal || c.Details["status"] != "expired" {
		t.Errorf("a coded refusal arrived as %#v", err)
	}
	if _, err := Exec(ctx, sock, drivers.ExecRequest{Command: "moved"}); !errors.Is(err, ErrNoBroker) {
		t.Errorf("a broker that no longer serves the sandbox: %v", err)
	}
	if res, err := Exec(ctx, sock, drivers.ExecRequest{Command: "x"}); err != nil || res.Stdout != "false" {
		t.Errorf("Exec asked the broker to record: %+v %v", res, err)
	}
	if res, err := ExecRecorded(ctx, sock, drivers.ExecRequest{Command: "x"}); err != nil || res.Stdout != "true" {
		t.Errorf("ExecRecorded did not ask the broker to record: %+v %v", res, err)
	}
}
