// Package coded is sbf's one error type with a stable code and
// machine-readable details. The CLI's --json error document and the MCP
// tool error envelope ({error_code, message, details}, SandboxForge v1's
// shape) are two renderings of it. Errors of other packages that know
// their code (a spec's validation errors, an unavailable backend, a held
// lock) implement Coder, so this package depends on none of them.
package coded

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Codes shared with SandboxForge v1's MCP tools, and sbf's own.
const (
	TTLInvalid         = "TTL_INVALID"
	InstanceLimit      = "INSTANCE_LIMIT_EXCEEDED"
	InstanceNotFound   = "INSTANCE_NOT_FOUND"
	InstanceTerminal   = "INSTANCE_TERMINAL"
	ConfigInvalid      = "WORKSPACE_CONFIG_INVALID"
	BackendUnavailable = "BACKEND_UNAVAILABLE"
	BackendCommand     = "BACKEND_COMMAND_FAILED"
	HostResources      = "INSUFFICIENT_HOST_RESOURCES"
	// VMSizeLimit is a VM asked for past the operator's max_cpus,
	// max_memory_gib or max_disk_gib.
	VMSizeLimit      = "VM_SIZE_LIMIT_EXCEEDED"
	InvalidArguments = "INVALID_ARGUMENTS"
	StalePlan        = "PLAN_STALE"
	StateLocked      = "STATE_LOCKED"
	// StateFileLink is a link where sbf keeps its own files (.sandboxforge/
	// and what is in it, the state home's files): sbf follows none there.
	StateFileLink = "STATE_FILE_LINK"
	// StateFileInvalid is one of sbf's own files that is not a regular
	// file, is larger than sbf ever writes, or does not parse.
	StateFileInvalid = "STATE_FILE_INVALID"
	// TokenInsecure is a bearer token file others may read, or a token
	// too short to be secret.
	TokenInsecure     = "TOKEN_INSECURE"
	PolicyUnsupported = "POLICY_UNSUPPORTED"
	// SnapshotUnsupported is a backend (or a VM of it) that keeps no
	// snapshots or makes no clones; the details say what would.
	SnapshotUnsupported = "SNAPSHOT_UNSUPPORTED"
	SnapshotNotFound    = "SNAPSHOT_NOT_FOUND"
	SnapshotExists      = "SNAPSHOT_EXISTS"
	SnapshotLimit       = "SNAPSHOT_LIMIT_EXCEEDED"
	// ForkUnsupported is a backend (or a VM of it) that cannot copy a
	// running sandbox from its memory; the details name the next step (a
	// clone from a disk snapshot).
	ForkUnsupported = "FORK_UNSUPPORTED"
	// ServiceManagerUnreachable is a host whose user service manager (a
	// systemd user instance, launchd, the task scheduler) could not be asked.
	ServiceManagerUnreachable = "SERVICE_MANAGER_UNREACHABLE"
	// ServerBusy is a call the server refused rather than queued: as many
	// calls as it works on at once are at work and as many wait.
	ServerBusy = "SERVER_BUSY"
	// ComposeLimit is a compose load refused at one of sbf's bounds on it
	// (file sizes, CPU time, memory, wall clock); the details name it.
	ComposeLimit = "COMPOSE_LIMIT_EXCEEDED"
	// GitLimit is a workspace's git state left unread at sbf's bounds on
	// what its objects inflate to.
	GitLimit = "GIT_LIMIT_EXCEEDED"
	// InstanceNotReady is a sandbox whose VM runs but whose guest did not
	// become ready for a command (its boot stopped, or went on too long).
	InstanceNotReady = "INSTANCE_NOT_READY"
	// Unknown is an error nothing classified.
	Unknown = "ERROR"
)

// Error is a failure with a stable code and machine-readable details.
type Error struct {
	Code    string         `json:"error_code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (e *Error) Error() string { return e.Message }

// New makes an Error; nil details become an empty map (the envelope always
// carries an object).
func New(code string, details map[string]any, format string, args ...any) *Error {
	if details == nil {
		details = map[string]any{}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: details}
}

// Coder is an error that knows its coded form.
type Coder interface {
	Coded() *Error
}

// Of classifies any error: the first *Error or Coder in its chain, with
// the message of the whole error (what was being done is kept), else
// fallback. Nil stays nil.
func Of(err error, fallback string) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	var c Coder
	switch {
	case errors.As(err, &e):
	case errors.As(err, &c):
		e = c.Coded()
	default:
		return New(fallback, nil, "%s", err.Error())
	}
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return &Error{Code: e.Code, Message: err.Error(), Details: details}
}

// MaxQuoted bounds how much of any input (a key, a path, a value from a
// request or a guest) one message repeats: a response must never grow
// with what it answers.
const MaxQuoted = 200

// Clip cuts s to MaxQuoted bytes on a rune boundary, saying how long it was.
func Clip(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Said is what a failed process wrote on stderr, for the end of a message
// that names the failure: ": " and the text trimmed, or " (no output)"
// when it wrote nothing, so that no message ends in a colon and nothing.
func Said(stderr string) string {
	if s := strings.TrimSpace(stderr); s != "" {
		return ": " + s
	}
	return " (no output)"
}

// ProcessEnd says how a command ended and what it said, for the end of a
// message about it: "exit 1: <its stderr>", "killed by signal interrupt
// (no output)". A status below zero with no signal named is a process that
// ended without a status of its own: os.ProcessState's -1, a signal.
func ProcessEnd(status int, signal, stderr string) string {
	how := fmt.Sprintf("exit %d", status)
	switch {
	case signal != "":
		how = "killed by signal " + signal
	case status < 0:
		how = "killed by a signal"
	}
	return how + Said(stderr)
}

// SignalOf names the signal that ended a process, "" when it exited.
func SignalOf(ps *os.ProcessState) string {
	if ps == nil {
		return ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
