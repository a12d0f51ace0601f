package ownfile

import (
	"fmt"
	"io/fs"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Error is one of sbf's own files (or folders) that sbf refuses to use:
// a link (STATE_FILE_LINK), or not a regular file, or larger than sbf
// ever writes there (STATE_FILE_INVALID).
type Error struct {
	Path    string // the name as sbf would use it: the link itself
	Problem string // what it is: "a link", "a named pipe", "73400320 bytes"
	Limit   int64  // the bound passed, for a file too large
}

const problemLink = "a link"

func (e *Error) Error() string { return e.Path + " " + e.Reason() }

// Reason is the message after the path.
func (e *Error) Reason() string {
	switch {
	case e.Problem == problemLink:
		return "is a link: sbf keeps its own files there and follows no link among them (a repository or a " +
			"guest may have put it there); remove it, and sbf makes its own again"
	case e.Limit > 0:
		return fmt.Sprintf("holds %s, more than sbf ever writes there (%d bytes): sbf does not read it; move it "+
			"aside", e.Problem, e.Limit)
	default:
		return fmt.Sprintf("is %s, not sbf's own: sbf opens only regular files and folders there; remove it, "+
			"and sbf makes its own again", e.Problem)
	}
}

// Coded is STATE_FILE_LINK naming the link, or STATE_FILE_INVALID.
func (e *Error) Coded() *coded.Error {
	code := coded.StateFileInvalid
	details := map[string]any{"path": e.Path, "problem": e.Problem}
	if e.Problem == problemLink {
		code = coded.StateFileLink
	}
	if e.Limit > 0 {
		details["limit_bytes"] = e.Limit
	}
	return coded.New(code, details, "%s", e.Error())
}

func refused(path, problem string) error { return &Error{Path: path, Problem: problem} }

func tooLarge(path string, size, limit int64) error {
	return &Error{Path: path, Problem: fmt.Sprintf("%d bytes", size), Limit: limit}
}

// check refuses a link, and anything but a folder (dir) or a regular file.
func check(info fs.FileInfo, path string, dir bool) error {
	m := info.Mode()
	switch {
	case isLink(info):
		return refused(path, problemLink)
	case dir && m.IsDir(), !dir && m.IsRegular():
		return nil
	}
	return refused(path, kind(m))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m.IsRegular():
		return "a file"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
