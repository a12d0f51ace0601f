package reconcile

import (
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/spec"
)

// Error codes shared with SandboxForge v1's MCP tools.
const (
	CodeTTLInvalid         = "TTL_INVALID"
	CodeInstanceLimit      = "INSTANCE_LIMIT_EXCEEDED"
	CodeInstanceNotFound   = "INSTANCE_NOT_FOUND"
	CodeInstanceTerminal   = "INSTANCE_TERMINAL"
	CodeConfigInvalid      = "WORKSPACE_CONFIG_INVALID"
	CodeBackendUnavailable = "BACKEND_UNAVAILABLE"
	CodeBackendCommand     = "BACKEND_COMMAND_FAILED"
	CodeStalePlan          = "PLAN_STALE"
)

// Error is a failure with a stable code and machine-readable details, for
// --json output and MCP tool errors.
type Error struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Message }

func errorf(code string, details map[string]any, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: details}
}

// CodeOf classifies any error for machine-readable output.
func CodeOf(err error) (code string, details map[string]any) {
	var e *Error
	var specErrs spec.Errors
	var unavailable *drivers.UnavailableError
	var locked *flock.LockedError
	var coded interface {
		ErrorCode() string
		ErrorDetails() map[string]any
	}
	switch {
	case errors.As(err, &e):
		return e.Code, e.Details
	case errors.As(err, &coded):
		return coded.ErrorCode(), coded.ErrorDetails()
	case errors.As(err, &specErrs):
		msgs := make([]string, len(specErrs))
		for i, se := range specErrs {
			msgs[i] = se.Sentence()
		}
		return CodeConfigInvalid, map[string]any{"errors": msgs, "positions": specErrs}
	case errors.As(err, &unavailable):
		return CodeBackendUnavailable, map[string]any{
			"backend":        map[string]any{"name": unavailable.Driver, "reason": unavailable.Reason},
			"reason":         unavailable.Reason,
			"probable_cause": unavailable.ProbableCause,
			"next_steps":     unavailable.NextSteps,
		}
	case errors.As(err, &locked):
		return "STATE_LOCKED", map[string]any{"path": locked.Path, "holder": locked.Holder}
	}
	return "ERROR", map[string]any{}
}
