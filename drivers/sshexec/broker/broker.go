// Package broker lets short-lived `sbf exec` processes share one
// long-lived connection to a VM, the way an SSH ControlMaster does: a
// broker process holds the driver (its SSH connection and guest shell)
// and serves commands on a unix socket; each `sbf exec` asks it instead
// of dialling the guest itself. It is the wire protocol only: what runs a
// command is passed in, so any driver's Exec can be served.
package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// ErrNoBroker means nothing answers on the socket.
var ErrNoBroker = errors.New("no exec broker is running")

// Version is the protocol's; a front door puts it in the socket's name, so
// a broker left running by an older sbf is never asked.
const Version = 3

type request struct {
	Command   string        `json:"command"`
	Timeout   time.Duration `json:"timeout"`
	MaxOutput int           `json:"max_output"`
	Stdin     bool          `json:"stdin"` // stdin frames follow
	// Record asks the broker to record the command in the workspace's
	// history: its client found the broker without reading the workspace.
	Record bool `json:"record,omitempty"`
}

type response struct {
	Result drivers.ExecResult `json:"result"`
	Error  string             `json:"error,omitempty"`
	// Code and Details are a coded error's (a lease that ended, say), so
	// the client reports it as if it had refused the command itself.
	Code    string         `json:"error_code,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	// Booting says the error is drivers.ErrBooting: nothing ran, and the
	// caller may wait for the boot and ask again.
	Booting bool `json:"booting,omitempty"`
	// Gone says the broker no longer serves the sandbox (ErrNoBroker):
	// nothing ran, and the caller may ask another way.
	Gone bool `json:"gone,omitempty"`
}

// recordKey carries a request's Record to the exec a broker serves.
type recordKey struct{}

// Recorded says whether the client of the command ctx serves asked the
// broker to record it (ExecRecorded).
func Recorded(ctx context.Context) bool {
	asked, _ := ctx.Value(recordKey{}).(bool)
	return asked
}

// bootingError is a broker's ErrBooting, its words kept.
type bootingError struct{ msg string }

func (e bootingError) Error() string { return e.msg }
func (e bootingError) Unwrap() error { return drivers.ErrBooting }

// Exec runs a command through the broker listening at socket. Output
// reaches req.StdoutTo and req.StderrTo as the command writes it, and
// req.Signals are passed on.
func Exec(ctx context.Context, socket string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return exec(ctx, socket, req, false)
}

// ExecRecorded is Exec for a client that leaves recording the command in
// the workspace's history to the broker.
func ExecRecorded(ctx context.Context, socket string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return exec(ctx, socket, req, true)
}

func exec(ctx context.Context, socket string, req drivers.ExecRequest, record bool) (drivers.ExecResult, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return drivers.ExecResult{}, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	line, _ := json.Marshal(
		request{Command: req.Command, Timeout: req.Timeout, MaxOutput: req.MaxOutput, Stdin: req.Stdin != nil,
			Record: record},
	)
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return drivers.ExecResult{}, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	out := &frameWriter{w: conn}
	done := make(chan struct{})
	defer close(done)
	if req.Stdin != nil {
		go func() {
			io.Copy(stream{out, frameStdin}, req.Stdin)
			out.send(frameStdinEnd, nil)
		}()
	}
	go func() {
		for {
			select {
			case sig := <-req.Signals:
				out.send(frameSignal, []byte(sig))
			case <-done:
				return
			}
		}
	}()
	return readAnswer(ctx, conn, req)
}

// readAnswer passes output frames on until the result frame.
func readAnswer(ctx context.Context, conn io.Reader, req drivers.ExecRequest) (drivers.ExecResult, error) {
	r := bufio.NewReader(conn)
	for {
		kind, p, err := readFrame(r)
		if err != nil {
			if ctx.Err() != nil {
				return drivers.ExecResult{}, ctx.Err()
			}
			return drivers.ExecResult{}, fmt.Errorf("reading the exec broker's answer: %w", err)
		}
		switch kind {
		case frameStdout:
			writeTo(req.StdoutTo, p)
		case frameStderr:
			writeTo(req.StderrTo, p)
		case frameResult:
			var resp response
			if err := json.Unmarshal(p, &resp); err != nil {
				return drivers.ExecResult{}, fmt.Errorf("reading the exec broker's answer: %w", err)
			}
			switch {
			case resp.Booting:
				return resp.Result, bootingError{resp.Error}
			case resp.Gone:
				return resp.Result, fmt.Errorf("%w: %s", ErrNoBroker, resp.Error)
			case resp.Code != "":
				return resp.Result, &coded.Error{Code: resp.Code, Message: resp.Error, Details: resp.Details}
			case resp.Error != "":
				return resp.Result, errors.New(resp.Error)
			}
			return resp.Result, nil
		}
	}
}

func writeTo(w io.Writer, p []byte) {
	if w != nil {
		w.Write(p)
	}
}

// Serve answers requests with exec until ctx ends or no request has come
// for idle (on c). Requests are served concurrently.
func Serve(
	ctx context.Context,
	ln net.Listener,
	exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error),
	idle time.Duration,
	c clock.Clock,
) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	active := 0
	idleTimer := c.NewTimer(idle)
	go func() {
		select {
		case <-idleTimer.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	begin := func() {
		mu.Lock()
		active++
		idleTimer.Stop()
		mu.Unlock()
	}
	end := func() {
		mu.Lock()
		if active--; active == 0 {
			idleTimer.Reset(idle)
		}
		mu.Unlock()
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		begin()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer end()
			serveOne(ctx, conn, exec)
		}()
	}
}

func serveOne(
	ctx context.Context,
	conn net.Conn,
	exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error),
) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	out := &frameWriter{w: conn}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		answer(out, drivers.ExecResult{}, fmt.Errorf("bad request: %w", err))
		return
	}
	// A client that goes away cancels its command.
	cctx, cancel := context.WithCancel(context.WithValue(ctx, recordKey{}, req.Record))
	defer cancel()
	signals := make(chan drivers.Signal, 4)
	er := drivers.ExecRequest{Command: req.Command, Timeout: req.Timeout, MaxOutput: req.MaxOutput,
		StdoutTo: stream{out, frameStdout}, StderrTo: stream{out, frameStderr}, Signals: signals}
	stdin, feed := io.Pipe()
	if req.Stdin {
		er.Stdin = stdin
	}
	chunks := make(chan []byte, 16)
	go func() {
		defer cancel()
		err := readClient(r, chunks, signals)
		close(chunks)
		feed.CloseWithError(err) // no effect once stdin reached its end
	}()
	go feedStdin(feed, chunks)
	res, err := exec(cctx, er)
	stdin.Close() // stdin the command left unread is dropped
	answer(out, res, err)
}

// feedStdin writes the client's stdin to the command as it reads it, so
// a command that is not reading yet does not hold up the client's signals.
func feedStdin(feed *io.PipeWriter, chunks <-chan []byte) {
	for p := range chunks {
		if p == nil {
			feed.Close()
			continue
		}
		feed.Write(p)
	}
}

// readClient takes the client's frames: stdin pieces onto chunks (nil at
// its end), signals onto signals. It returns when the client goes away.
func readClient(r io.Reader, chunks chan<- []byte, signals chan<- drivers.Signal) error {
	for {
		kind, p, err := readFrame(r)
		if err != nil {
			return err
		}
		switch kind {
		case frameStdin:
			if len(p) > 0 {
				chunks <- p
			}
		case frameStdinEnd:
			chunks <- nil
		case frameSignal:
			select {
			case signals <- drivers.Signal(p):
			default: // a burst of signals: the command has some queued
			}
		}
	}
}

// answer sends the last frame: the result, or the error that ended it.
func answer(out *frameWriter, res drivers.ExecResult, err error) {
	resp := response{Result: res}
	if err != nil {
		resp.Error, resp.Booting, resp.Gone = err.Error(), errors.Is(err, drivers.ErrBooting), errors.Is(err, ErrNoBroker)
	}
	if c := (*coded.Error)(nil); errors.As(err, &c) {
		resp.Code, resp.Details = c.Code, c.Details
	}
	b, _ := json.Marshal(resp)
	out.send(frameResult, b)
}
