package sandbox

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/termsafe"
)

// A command runs under `eval` in the guest's sh (sshexec's spare, and the
// `sh -c` of a session of its own or of the sim: sshexec.StatusPassing),
// so dash words its own failures as the wrapper's: "sh: 1: eval:
// nosuchcmd: not found". hideWrapper rewrites those lines of a command's
// stderr, streamed and kept alike, as the person or agent who typed the
// command should read them: "sbf: nosuchcmd: command not found in the
// guest" (the status stays 127), and any other of the wrapper's messages
// without "eval: " ("sh: 1: Syntax error: ..."), as `sh -c` says it. Only
// a line that begins like the wrapper's is held back, until its end; every
// other byte passes at once.

// wrapperHead and wrapperEval frame the wrapper's lines: wrapperHead, a
// line number, wrapperEval.
const (
	wrapperHead = "sh: "
	wrapperEval = ": eval: "
	// maxWrapperLine is the longest line held back; past it the line passes.
	maxWrapperLine = 4096
)

// hideWrapper runs a command with its stderr's wrapper lines rewritten.
func hideWrapper(req drivers.ExecRequest,
	run func(drivers.ExecRequest) (drivers.ExecResult, error)) (drivers.ExecResult, error) {
	var streamed *wrapperLines
	if req.StderrTo != nil {
		streamed = &wrapperLines{w: req.StderrTo}
		req.StderrTo = streamed
	}
	res, err := run(req)
	if streamed != nil {
		streamed.Flush()
	}
	if strings.Contains(res.Stderr, wrapperEval) {
		kept := rewriteWrapperLines(res.Stderr)
		res.StderrBytes += int64(len(kept) - len(res.Stderr))
		res.Stderr = kept
	}
	return res, err
}

// rewriteWrapperLines is hideWrapper's rewrite of a whole text.
func rewriteWrapperLines(s string) string {
	var b strings.Builder
	w := &wrapperLines{w: &b}
	io.WriteString(w, s)
	w.Flush()
	return b.String()
}

// wrapperLines passes a stream on with the wrapper's lines rewritten.
type wrapperLines struct {
	mu      sync.Mutex // a backend that gave up on a command may still be writing as Flush runs
	w       io.Writer
	held    []byte // the start of a line that may be the wrapper's
	passing bool   // the current line is not: it passes to its end
	err     error
}

func (l *wrapperLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 && l.err == nil {
		end := bytes.IndexByte(p, '\n') + 1 // 0: the line goes on past p
		line := p
		if end > 0 {
			line = p[:end]
		}
		p = p[len(line):]
		switch {
		case l.passing:
			l.write(line)
			l.passing = end == 0
		case end > 0:
			l.write(rewriteWrapperLine(append(l.held, line...)))
			l.held = l.held[:0]
		default:
			l.held = append(l.held, line...)
			if !mayBeWrapperLine(l.held) || len(l.held) > maxWrapperLine {
				l.write(l.held)
				l.held, l.passing = l.held[:0], true
			}
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return n, nil
}

// Flush writes what is held (a last line without its end).
func (l *wrapperLines) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) > 0 && l.err == nil {
		l.write(rewriteWrapperLine(l.held))
	}
	l.held = nil
}

func (l *wrapperLines) write(b []byte) {
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
}

// mayBeWrapperLine says whether a line's start may still be one of the
// wrapper's: "sh: ", digits, ": eval: ", then anything.
func mayBeWrapperLine(b []byte) bool {
	s := string(b)
	if len(s) <= len(wrapperHead) {
		return strings.HasPrefix(wrapperHead, s)
	}
	if !strings.HasPrefix(s, wrapperHead) {
		return false
	}
	s = s[len(wrapperHead):]
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if digits == len(s) {
		return true
	}
	if digits == 0 {
		return false
	}
	s = s[digits:]
	if len(s) <= len(wrapperEval) {
		return strings.HasPrefix(wrapperEval, s)
	}
	return strings.HasPrefix(s, wrapperEval)
}

// rewriteWrapperLine rewrites one line (with its end, if it has one) when
// it is the wrapper's.
func rewriteWrapperLine(line []byte) []byte {
	text := string(line)
	body, eol := strings.CutSuffix(text, "\n")
	rest, ok := strings.CutPrefix(body, wrapperHead)
	num := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if !ok || num == 0 || !strings.HasPrefix(rest[num:], wrapperEval) {
		return line
	}
	msg := rest[num+len(wrapperEval):]
	nl := ""
	if eol {
		nl = "\n"
	}
	if name, ok := strings.CutSuffix(msg, ": not found"); ok && name != "" {
		// sbf's voice now, so the name (the command's own word) is escaped.
		return []byte("sbf: " + termsafe.Line(name) + ": command not found in the guest" + nl)
	}
	return []byte(wrapperHead + rest[:num] + ": " + msg + nl)
}
