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
)

// ErrNoBroker means nothing answers on the socket.
var ErrNoBroker = errors.New("no exec broker is running")

type request struct {
	Command   string        `json:"command"`
	Timeout   time.Duration `json:"timeout"`
	MaxOutput int           `json:"max_output"`
	Stdin     bool          `json:"stdin"` // raw stdin bytes follow the request line until EOF
}

type response struct {
	Result drivers.ExecResult `json:"result"`
	Error  string             `json:"error,omitempty"`
}

// Exec runs a command through the broker listening at socket.
func Exec(ctx context.Context, socket string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return drivers.ExecResult{}, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	line, _ := json.Marshal(request{Command: req.Command, Timeout: req.Timeout, MaxOutput: req.MaxOutput, Stdin: req.Stdin != nil})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return drivers.ExecResult{}, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	if req.Stdin != nil {
		go func() {
			io.Copy(conn, req.Stdin)
			conn.(*net.UnixConn).CloseWrite()
		}()
	}
	var resp response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return drivers.ExecResult{}, ctx.Err()
		}
		return drivers.ExecResult{}, fmt.Errorf("reading the exec broker's answer: %w", err)
	}
	if resp.Error != "" {
		return resp.Result, errors.New(resp.Error)
	}
	return resp.Result, nil
}

// Serve answers requests with exec until ctx ends or no request has come
// for idle (on c). Requests are served concurrently.
func Serve(ctx context.Context, ln net.Listener, exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error),
	idle time.Duration, c clock.Clock) error {
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

func serveOne(ctx context.Context, conn net.Conn, exec func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error)) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		json.NewEncoder(conn).Encode(response{Error: "bad request: " + err.Error()})
		return
	}
	er := drivers.ExecRequest{Command: req.Command, Timeout: req.Timeout, MaxOutput: req.MaxOutput}
	if req.Stdin {
		er.Stdin = r
	}
	// A client that goes away cancels its command.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !req.Stdin {
		go func() {
			var b [1]byte
			r.Read(b[:])
			cancel()
		}()
	}
	res, err := exec(cctx, er)
	resp := response{Result: res}
	if err != nil {
		resp.Error = err.Error()
	}
	json.NewEncoder(conn).Encode(resp)
}
