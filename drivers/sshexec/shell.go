package sshexec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
)

// shell is a long-lived `sh` in the guest that runs commands one at a
// time from its stdin. A command then costs a process wake-up in the
// guest, where a new SSH session costs sshd a fork, a login shell and its
// session setup: under software emulation, about 4–16 ms against 120 ms.
//
// Each command runs in a subshell forked ahead of it (protocol.go), so it
// cannot change the next one's directory or variables, and is followed by
// a marker line on stdout (with the exit status) and on stderr. Markers
// carry a random token, so a command cannot end its own output early by
// accident.
type shell struct {
	mu     sync.Mutex // one command at a time
	sess   io.Closer  // an SSH session of ours, or one an OpenSSH master opened (master.go)
	stdin  io.WriteCloser
	stdout *markedStream
	stderr *markedStream
	token  string
	pid    int // leads the POSIX session its commands run in
	// onMaster says sess is a session of an OpenSSH master's (master.go).
	onMaster bool
	next     int
	broken   bool
	// owedOut and owedErr are the markers whose shell line is still to
	// come on each stream (the spare printed first); see protocol.go.
	owedOut, owedErr string
}

func startShell(c *ssh.Client) (*shell, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := firstErr(err1, err2, err3); err != nil {
		sess.Close()
		return nil, err
	}
	if err := sess.Start(shellCommand); err != nil {
		sess.Close()
		return nil, err
	}
	return greetShell(sess, stdin, stdout, stderr)
}

const shellCommand = "exec sh -s"

// startMasterShell starts a guest shell on a session the OpenSSH master at
// controlPath opens.
func startMasterShell(ctx context.Context, controlPath string) (*shell, error) {
	s, err := openMasterSession(ctx, controlPath, shellCommand)
	if err != nil {
		return nil, err
	}
	sh, err := greetShell(s, s.stdin, s.stdout, s.stderr)
	if err != nil {
		return nil, err
	}
	sh.onMaster = true
	return sh, nil
}

func greetShell(sess io.Closer, stdin io.WriteCloser, stdout, stderr io.Reader) (*shell, error) {
	sh := &shell{
		sess:   sess,
		stdin:  stdin,
		stdout: newMarkedStream(stdout),
		stderr: newMarkedStream(stderr),
		token:  newToken(),
	}
	if err := sh.greet(); err != nil {
		sess.Close()
		return nil, fmt.Errorf("starting the guest shell: %w", err)
	}
	return sh, nil
}

func newToken() string {
	var tok [8]byte
	rand.Read(tok[:])
	return "@@sbf-" + hex.EncodeToString(tok[:])
}

// greet sends the shell its greeting and learns its pid.
func (s *shell) greet() error {
	marker := s.token + "-pid"
	if _, err := io.WriteString(s.stdin, greeting(marker, s.token)); err != nil {
		return err
	}
	rest, err := s.stdout.readUntil(marker, io.Discard)
	if err != nil {
		return err
	}
	if s.pid, err = strconv.Atoi(rest); err != nil {
		return fmt.Errorf("reading its pid: %q", rest)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// run executes one command. A context that ends first, or the command's
// deadline, breaks the shell (the caller discards it) and kills the
// command in the guest. The deadline is kept here, not by the guest's
// `timeout`: wrapping a command in `timeout … sh -c` costs two more execs
// in the guest, ~140 ms per command under software emulation.
func (s *shell) run(ctx context.Context, req drivers.ExecRequest, f *forwarder) (drivers.ExecResult, error) {
	s.next++
	marker := markerOf(s.token, s.next)
	if _, err := io.WriteString(s.stdin, commandLine(req.Command)); err != nil {
		s.broken = true
		return drivers.ExecResult{}, err
	}
	f.learn(s.pid)
	stop := f.run(req.Signals)
	defer stop()
	stdout, stderr, toStdout, toStderr := req.Outputs()
	type end struct {
		rest string
		err  error
	}
	outDone, errDone := make(chan end, 1), make(chan end, 1)
	owedOut, owedErr := s.owedOut, s.owedErr
	go func() { r, err := s.stdout.readCommand(owedOut, marker, toStdout); outDone <- end{r, err} }()
	go func() { r, err := s.stderr.readCommand(owedErr, marker, toStderr); errDone <- end{r, err} }()
	var deadline <-chan time.Time
	if req.Timeout > 0 {
		t := f.p.opts.Clock.NewTimer(req.Timeout)
		defer t.Stop()
		deadline = t.C()
	}
	var out, errOut end
	got := 0
	// abandon ends the command and the shell, and waits for the readers
	// to let go of the output buffers before they are read.
	abandon := func() drivers.ExecResult {
		s.broken = true
		f.kill()
		s.sess.Close()
		for ; got < 2; got++ {
			select {
			case <-outDone:
			case <-errDone:
			case <-f.p.opts.Clock.After(5 * time.Second):
				return drivers.ExecResult{Via: "ssh-shell", ExitCode: -1, TimedOut: true}
			}
		}
		return Result(stdout, stderr, "ssh-shell")
	}
	for got < 2 {
		select {
		case out = <-outDone:
			got++
		case errOut = <-errDone:
			got++
		case <-deadline:
			res := abandon()
			MarkTimedOut(&res, req.Timeout)
			return res, nil
		case <-ctx.Done():
			res := abandon()
			res.ExitCode, res.TimedOut = -1, true
			return res, ctx.Err()
		}
	}
	if err := firstErr(out.err, errOut.err); err != nil {
		s.broken = true
		return drivers.ExecResult{}, err
	}
	res := Result(stdout, stderr, "ssh-shell")
	outEnd, errEnd := parseEnding(out.rest), parseEnding(errOut.rest)
	s.owedOut, s.owedErr = owed(outEnd, marker), owed(errEnd, marker)
	code, err := strconv.Atoi(outEnd.status)
	if err != nil {
		s.broken = true
		return res, fmt.Errorf("reading the exit status: %q", out.rest)
	}
	exited(&res, code, req.Timeout)
	return res, nil
}

func (s *shell) close() { s.sess.Close() }

// owed is the marker whose shell line a stream still owes after e.
func owed(e ending, marker string) string {
	if e.shellOwing {
		return marker
	}
	return ""
}

// markedStream splits one output stream into per-command pieces at
// markers of the form "<marker>[ <rest>]\n". A marker is found anywhere,
// not only at a line's start, so output without a final newline keeps its
// exact bytes, and output streams as soon as its tail cannot begin one.
type markedStream struct {
	r   io.Reader
	buf []byte
}

func newMarkedStream(r io.Reader) *markedStream { return &markedStream{r: r} }

// readUntil copies the stream into w up to the marker and returns what
// follows the marker on its line.
func (m *markedStream) readUntil(marker string, w io.Writer) (string, error) {
	needle := []byte(marker)
	chunk := make([]byte, 32<<10)
	for {
		if i := bytes.Index(m.buf, needle); i >= 0 {
			rest := m.buf[i+len(needle):]
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				w.Write(m.buf[:i])
				tail := string(bytes.TrimPrefix(rest[:j], []byte(" ")))
				m.buf = append(m.buf[:0], rest[j+1:]...)
				return tail, nil
			}
			if len(rest) > maxMarkerRest {
				// Only an exit status or a pid follows a marker: a guest that
				// learnt the token must not make the host buffer its output.
				return "", fmt.Errorf("guest shell: a marker line runs on past %d bytes", maxMarkerRest)
			}
		} else if keep := partialMarker(m.buf, needle); keep < len(m.buf) {
			// Pass on everything that cannot be the start of a marker, so
			// output streams as it comes.
			w.Write(m.buf[:len(m.buf)-keep])
			m.buf = append(m.buf[:0], m.buf[len(m.buf)-keep:]...)
		}
		n, err := m.r.Read(chunk)
		m.buf = append(m.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return "", fmt.Errorf("guest shell ended: %w", err)
		}
	}
}

// readCommand is readUntil for one command's output: what precedes the
// shell's marker line of the last command (owed, when its spare printed
// first) is this command's too.
func (m *markedStream) readCommand(owed, marker string, w io.Writer) (string, error) {
	if owed != "" {
		if _, err := m.readUntil(owed, w); err != nil {
			return "", err
		}
	}
	return m.readUntil(marker, w)
}

// maxMarkerRest bounds what may follow a marker on its line.
const maxMarkerRest = 64

// partialMarker is the length of the longest tail of buf that begins the
// needle (a marker cut between two reads).
func partialMarker(buf, needle []byte) int {
	for n := min(len(buf), len(needle)-1); n > 0; n-- {
		if bytes.HasSuffix(buf, needle[:n]) {
			return n
		}
	}
	return 0
}

// copyRest copies whatever follows the last marker read to w until the
// stream ends.
func (m *markedStream) copyRest(w io.Writer) {
	w.Write(m.buf)
	m.buf = nil
	io.Copy(w, m.r)
}
