package sshexec

import (
	"io"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// StartWatch tells, for a command run through another program's SSH
// (a driver's fallback: `limactl shell`), what that program printed of its
// own — "Connection refused", a handshake that failed — from what the
// command did: the command first names its start on stderr, behind a
// token, then becomes itself. An exit status without that line is the
// transport's, not the command's.
type StartWatch struct {
	token   string
	before  *drivers.CappedBuffer
	started bool
}

// maxBefore bounds what a transport may print before the command starts.
const maxBefore = 16 << 10

// NewStartWatch returns a watch with a fresh token.
func NewStartWatch() *StartWatch {
	return &StartWatch{token: newToken() + "-started", before: drivers.NewCappedBuffer(maxBefore)}
}

// Argv is the command to run in the guest in place of `sh -c command`.
func (w *StartWatch) Argv(command string) []string {
	return []string{"sh", "-c", `printf '%s\n' "$0" >&2; exec sh -c "$1"`, w.token, command}
}

// Copy reads the command's stderr: what comes before the start line is
// kept for Before, what follows is copied to stderr as it comes. It
// returns when r ends; call it before reading Started.
func (w *StartWatch) Copy(r io.Reader, stderr io.Writer) {
	m := newMarkedStream(r)
	if _, err := m.readUntil(w.token, w.before); err != nil {
		return
	}
	w.started = true
	m.copyRest(stderr)
}

// Started says whether the command started.
func (w *StartWatch) Started() bool { return w.started }

// Before is what the transport printed before the command started (all
// it printed, when it never did).
func (w *StartWatch) Before() string { return strings.TrimSpace(w.before.String()) }
