package hyperv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"os/exec"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

// timeouts bound each operation's PowerShell run (v1: 10 s for a probe,
// 30 s for a list); Hyper-V's cmdlets load slowly the first time.
var timeouts = map[string]time.Duration{
	"probe":       time.Minute,
	"list":        time.Minute,
	"ip":          30 * time.Second,
	"create":      5 * time.Minute,
	"start":       2 * time.Minute,
	"stop":        2 * time.Minute,
	"delete":      5 * time.Minute,
	"reconfigure": 2 * time.Minute,
}

// CommandError is a PowerShell run that failed.
type CommandError struct {
	Op       string
	ExitCode int // -1 when it timed out
	Stderr   string
	Timeout  time.Duration // set when it timed out
}

func (e *CommandError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("powershell %s: timed out after %s", e.Op, e.Timeout)
	}
	return fmt.Sprintf("powershell %s: exit %d%s", e.Op, e.ExitCode, coded.Said(errorMessage(e.Stderr)))
}

// errorMessage keeps what PowerShell says went wrong and drops where
// ("At line:3 char:1", "+ CategoryInfo …"), which names sbf's script.
func errorMessage(stderr string) string {
	var keep []string
	for _, line := range strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "At line:") || strings.HasPrefix(t, "At ") && strings.Contains(t, "char:") {
			break
		}
		if t != "" {
			keep = append(keep, t)
		}
	}
	msg := strings.Join(keep, " ")
	if msg == "" {
		msg = strings.TrimSpace(stderr)
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return msg
}

// run executes one script and returns its stdout.
func (d *Driver) run(ctx context.Context, s script) ([]byte, error) {
	text, err := s.render()
	if err != nil {
		return nil, err
	}
	timeout := d.opts.CommandTimeout
	if timeout == 0 {
		timeout = timeouts[s.op]
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := proc.Command(rctx, d.powershell, "-NoProfile", "-NonInteractive", "-Command", text)
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes must not hang sbf
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := d.opts.Clock.Now()
	err = cmd.Run()
	d.opts.Debug("hyperv: %s took %s (%v)", s.op, d.opts.Clock.Now().Sub(start), err)
	var exit *exec.ExitError
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		return nil, &CommandError{Op: s.op, ExitCode: -1, Stderr: errb.String(), Timeout: timeout}
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("powershell %s: %w", s.op, ctx.Err())
	case errors.As(err, &exit):
		return out.Bytes(), &CommandError{Op: s.op, ExitCode: exit.ExitCode(), Stderr: errb.String()}
	case err != nil:
		return nil, fmt.Errorf("running %s for %s: %w", d.powershell, s.op, err)
	}
	return out.Bytes(), nil
}

func exitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.ExitCode
	}
	return 0
}

// psArray reads what ConvertTo-Json makes of a PowerShell array, which
// depends on how many items it has and how it was built: nothing or null
// (none), a bare value (one), a JSON array, or Windows PowerShell 5.1's
// {"value": [...], "Count": n} for arrays carrying extra type data.
type psArray []string

func (a *psArray) UnmarshalJSON(data []byte) error {
	items, err := unwrapArray(data)
	if err != nil {
		return err
	}
	*a = nil
	for _, raw := range items {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("an array item: %w", err)
		}
		*a = append(*a, s)
	}
	return nil
}

// unwrapArray returns the items of any of the shapes psArray describes.
func unwrapArray(data []byte) ([]json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || string(data) == "null":
		return nil, nil
	case data[0] == '[':
		var items []json.RawMessage
		return items, json.Unmarshal(data, &items)
	case data[0] == '{':
		var wrapped struct {
			Value *[]json.RawMessage `json:"value"`
			Count *int               `json:"Count"`
		}
		if json.Unmarshal(data, &wrapped) == nil && wrapped.Value != nil && wrapped.Count != nil {
			return *wrapped.Value, nil
		}
	}
	return []json.RawMessage{data}, nil
}
