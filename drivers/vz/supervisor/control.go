package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// The control protocol: one JSON request per connection, one JSON
// Status in reply. A stop is answered once the machine has stopped.
type request struct {
	Op        string `json:"op"` // "status" or "stop"
	Force     bool   `json:"force,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"` // of the clean stop before a forced one
}

// Machine states a supervisor reports.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateStopping = "stopping"
	StateStopped  = "stopped"
)

// Status is a supervisor's answer.
type Status struct {
	State string `json:"state"`
	PID   int    `json:"pid"`
	MAC   string `json:"mac"`
	Error string `json:"error,omitempty"` // why the machine stopped, when it failed
}

// Up reports whether the supervisor's machine is (or is becoming) a
// running VM.
func (st Status) Up() bool { return st.State == StateRunning || st.State == StateStarting }

// Query asks the supervisor listening on sock how its machine is. A
// missing socket or one nobody listens on (a crashed supervisor) is an
// error the caller treats as "not running".
func Query(ctx context.Context, sock string) (Status, error) {
	return ask(ctx, sock, request{Op: "status"})
}

// Stop asks the supervisor on sock to stop its machine: cleanly (the
// ACPI power button) for up to timeout, then by force; at once by force
// when force is set. The answer comes once the machine has stopped.
func Stop(ctx context.Context, sock string, force bool, timeout time.Duration) (Status, error) {
	return ask(ctx, sock, request{Op: "stop", Force: force, TimeoutMS: timeout.Milliseconds()})
}

func ask(ctx context.Context, sock string, req request) (Status, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return Status{}, fmt.Errorf("reaching the vz supervisor at %s: %w", sock, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Status{}, fmt.Errorf("asking the vz supervisor to %s: %w", req.Op, err)
	}
	var st Status
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return Status{}, fmt.Errorf("reading the vz supervisor's answer to %s: %w", req.Op, err)
	}
	if err := json.Unmarshal(line, &st); err != nil {
		return Status{}, fmt.Errorf("parsing the vz supervisor's answer to %s: %w", req.Op, err)
	}
	return st, nil
}
