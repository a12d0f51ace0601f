package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/proc"
	"github.com/sandboxforge/sbf/internal/service"
)

// The steps `sbf service` hands the service manager (systemctl, launchctl,
// schtasks), run one by one, and what their failures say.

// runSteps tells the service manager, stopping at the first failure of a
// step that must succeed.
func (a *app) runSteps(steps []service.Step) error {
	for _, s := range steps {
		if err := runStep(s); err != nil && !s.MayFail {
			return err
		}
	}
	return nil
}

// stepError is a service manager command that failed, with what it said.
type stepError struct {
	step   service.Step
	err    error
	output string
}

func (e *stepError) Error() string { return fmt.Sprintf("%s: %v\n%s", e.step, e.err, e.output) }
func (e *stepError) Unwrap() error { return e.err }

func runStep(s service.Step) error {
	_, err := stepOutput(s)
	return err
}

// stepOutput runs a step and returns what it printed, trimmed.
func stepOutput(s service.Step) (string, error) {
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	proc.Group(cmd)
	out, err := cmd.CombinedOutput()
	said := string(bytes.TrimSpace(out))
	if err != nil {
		return said, &stepError{step: s, err: err, output: said}
	}
	return said, nil
}

// unreachable says whether a failed step failed because there is no
// manager to talk to, not because of what it was asked: no systemctl or
// launchctl at all, or a shell outside a login session (su, sudo, a
// container), where systemctl --user finds no bus.
func unreachable(m service.Manager, err error) bool {
	if errors.Is(err, exec.ErrNotFound) {
		return true
	}
	var se *stepError
	if !errors.As(err, &se) || m.Kind() != "systemd" {
		return false
	}
	for _, sign := range []string{"Failed to connect to bus", "$DBUS_SESSION_BUS_ADDRESS",
		"No medium found", "System has not been booted with systemd"} {
		if strings.Contains(se.output, sign) {
			return true
		}
	}
	return false
}

// managerUnreachable is the error for a host whose user service manager
// did not answer, with the ways to get one.
func managerUnreachable(m service.Manager, what string, err error) error {
	next := "run 'sbf serve --loop-only' under a supervisor you have instead"
	if m.Kind() == "systemd" {
		next = "systemctl --user needs a login session's user manager (log in over ssh or at the console, " +
			"not su or sudo; 'loginctl enable-linger $USER' keeps one running without a login), then run " +
			"the command again; or run 'sbf serve --loop-only' under a supervisor you have"
	}
	return coded.New(coded.ServiceManagerUnreachable, map[string]any{"manager": m.Kind(), "file": m.Path()},
		"%s: no %s user service manager answers (%v).\nNext: %s", what, m.Kind(), stepSaid(err), next)
}

// stepSaid is the first line a failed step printed, or its error.
func stepSaid(err error) string {
	var se *stepError
	if errors.As(err, &se) && se.output != "" {
		line, _, _ := strings.Cut(se.output, "\n")
		return line
	}
	return err.Error()
}
