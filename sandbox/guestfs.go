package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// The file tools act on guest paths only: every one is a short POSIX sh
// script run through the target's Exec, with each path a single-quoted
// word, so the guest's own view of its files (its links, its permissions)
// decides, and no host path is ever opened. A relative path is relative
// to the guest user's home, where commands start.

// Codes of the file tools' failures.
const (
	CodeGuestPathNotFound     = "GUEST_PATH_NOT_FOUND"
	CodeGuestPathIsDirectory  = "GUEST_PATH_IS_DIRECTORY"
	CodeGuestPathNotDirectory = "GUEST_PATH_NOT_DIRECTORY"
	CodeGuestPathNotFile      = "GUEST_PATH_NOT_A_FILE"
	CodeGuestPathExists       = "GUEST_PATH_EXISTS"
	CodeGuestPermission       = "GUEST_PERMISSION_DENIED"
	CodeGuestDirNotEmpty      = "GUEST_DIRECTORY_NOT_EMPTY"
)

// Bounds of the file tools: what one call reads, writes or lists.
const (
	DefaultReadLimit = 1 << 20
	MaxReadLimit     = 4 << 20
	MaxWriteBytes    = 8 << 20
	DefaultListLimit = 1000
	MaxListLimit     = 10000
	MaxGuestPath     = 4096
	fileToolTimeout  = 60 * time.Second
)

// Exit statuses the scripts use to say why they stopped; anything else is
// a failure reported with the guest's stderr.
var exitCodes = map[int]string{
	3: CodeGuestPathNotFound, 4: CodeGuestPathIsDirectory, 5: CodeGuestPathNotDirectory,
	6: CodeGuestPermission, 7: CodeGuestPathExists, 8: CodeGuestDirNotEmpty, 9: CodeGuestPathNotFile,
	10: CodeGuestPathExists, // a move or copy's destination (guestfs_move.go words it)
}

// guestPather is a backend whose commands do not see guest paths as its
// guest does (the sim, whose guest is a host folder): it maps them.
type guestPather interface {
	GuestPath(instance, p string) string
}

// CheckGuestPath validates a guest path a caller gave: not empty, no NUL
// byte (no shell word can carry one), at most 4096 bytes.
func CheckGuestPath(field, p string) error {
	switch {
	case p == "":
		return coded.New(coded.InvalidArguments, map[string]any{"field": field}, "%s cannot be empty", field)
	case strings.ContainsRune(p, 0):
		return coded.New(coded.InvalidArguments, map[string]any{"field": field}, "%s contains a NUL byte", field)
	case len(p) > MaxGuestPath:
		return coded.New(coded.InvalidArguments, map[string]any{"field": field, "max": MaxGuestPath},
			"%s is %d bytes long; at most %d", field, len(p), MaxGuestPath)
	}
	return nil
}

// fsScript runs one file tool's script with its paths as shell variables
// (each quoted), mapping the script's exit statuses to coded errors.
type fsScript struct {
	tool   string
	path   string // the guest path, as the caller named it
	vars   [][2]string
	body   string
	stdin  []byte
	maxOut int
}

// run runs the script; the result's stdout is the script's.
func (t *Target) runFS(ctx context.Context, s fsScript) (drivers.ExecResult, error) {
	var b strings.Builder
	for _, v := range s.vars {
		b.WriteString(v[0] + "=" + shellquote.Quote(v[1]) + "\n")
	}
	b.WriteString(s.body)
	req := drivers.ExecRequest{Command: b.String(), Timeout: fileToolTimeout, MaxOutput: s.maxOut}
	if s.stdin != nil {
		req.Stdin = bytes.NewReader(s.stdin)
	}
	res, err := t.ExecBrokered(ctx, req)
	if err != nil {
		return res, fmt.Errorf("%s %s in %s: %w", s.tool, coded.Clip(s.path), t.Sandbox, err)
	}
	if res.TimedOut {
		return res, coded.New(coded.BackendCommand, map[string]any{"path": s.path, "timed_out": true},
			"%s %s in %s: no answer within %s", s.tool, coded.Clip(s.path), t.Sandbox, fileToolTimeout)
	}
	if res.ExitCode == 0 {
		return res, nil
	}
	details := map[string]any{"path": s.path, "sandbox": t.Sandbox}
	if code, ok := exitCodes[res.ExitCode]; ok {
		return res, coded.New(code, details, "%s %s: %s", s.tool, coded.Clip(s.path), describe(code))
	}
	details["exit_code"], details["stderr"] = res.ExitCode, coded.Clip(strings.TrimSpace(res.Stderr))
	return res, coded.New(coded.BackendCommand, details, "%s %s in %s failed: %s", s.tool, coded.Clip(s.path),
		t.Sandbox, coded.Clip(strings.TrimSpace(res.Stderr)))
}

func describe(code string) string {
	switch code {
	case CodeGuestPathNotFound:
		return "no such file or directory in the guest"
	case CodeGuestPathIsDirectory:
		return "is a directory"
	case CodeGuestPathNotDirectory:
		return "is not a directory"
	case CodeGuestPathNotFile:
		return "is not a regular file"
	case CodeGuestPathExists:
		return "exists and is not a directory"
	case CodeGuestDirNotEmpty:
		return "is a directory that is not empty (remove it with recursive)"
	}
	return "permission denied in the guest"
}

// mapPath is the path the target's commands see for a guest path.
func (t *Target) mapPath(p string) (string, error) {
	drv, err := t.Driver()
	if err != nil {
		return "", err
	}
	if gp, ok := drv.(guestPather); ok {
		return gp.GuestPath(t.Instance, p), nil
	}
	return p, nil
}

// ReadResult is a piece of a guest file.
type ReadResult struct {
	Path       string
	Data       []byte
	Size       int64 // the whole file's, when it was read
	Offset     int64
	Truncated  bool  // the file goes on after Data
	NextOffset int64 // where a next read would start
}

// ReadFile reads up to limit bytes (DefaultReadLimit when ≤ 0, at most
// MaxReadLimit) of a regular guest file from offset.
func (t *Target) ReadFile(ctx context.Context, p string, offset int64, limit int) (ReadResult, error) {
	if err := CheckGuestPath("path", p); err != nil {
		return ReadResult{}, err
	}
	if offset < 0 {
		return ReadResult{}, coded.New(coded.InvalidArguments, map[string]any{"field": "offset"},
			"offset cannot be negative")
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	if limit > MaxReadLimit {
		return ReadResult{}, coded.New(coded.InvalidArguments, map[string]any{"field": "limit", "max": MaxReadLimit},
			"limit is at most %d bytes", MaxReadLimit)
	}
	mapped, err := t.mapPath(p)
	if err != nil {
		return ReadResult{}, err
	}
	// tail seeks to the offset in a regular file rather than reading up to it.
	read := "head -c " + strconv.Itoa(limit) + ` < "$f"`
	if offset > 0 {
		read = "tail -c +" + strconv.FormatInt(offset+1, 10) + ` < "$f" | head -c ` + strconv.Itoa(limit)
	}
	res, err := t.runFS(ctx, fsScript{tool: "read_file", path: p, vars: [][2]string{{"f", mapped}},
		maxOut: limit + 64, body: `[ -e "$f" ] || exit 3
[ -d "$f" ] && exit 4
[ -f "$f" ] || exit 9
[ -r "$f" ] || exit 6
n=$(wc -c < "$f") || exit 1
echo $n
` + read})
	if err != nil {
		return ReadResult{}, err
	}
	head, data, _ := strings.Cut(res.Stdout, "\n")
	size, err := strconv.ParseInt(strings.TrimSpace(head), 10, 64)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read_file %s: the guest answered %q for its size", coded.Clip(p), coded.Clip(head))
	}
	out := ReadResult{Path: p, Data: []byte(data), Size: size, Offset: offset}
	out.NextOffset = offset + int64(len(out.Data))
	out.Truncated = out.NextOffset < size
	return out, nil
}

// WriteRequest is a whole guest file to write.
type WriteRequest struct {
	Path string
	Data []byte
	// Mode is the file's permissions; nil keeps an existing file's and
	// makes a new one 0644.
	Mode *fs.FileMode
	// MakeParents creates missing parent folders (0755).
	MakeParents bool
}

// WriteResult is what WriteFile wrote.
type WriteResult struct {
	Path  string
	Bytes int
	Mode  string // octal, as the guest set it
}

// WriteFile replaces a guest file atomically: the content goes to a
// temporary file beside it, which is given its mode and then renamed over
// the path, so a reader sees the old file or the new one, never half. A
// link at the path is replaced, not followed.
func (t *Target) WriteFile(ctx context.Context, w WriteRequest) (WriteResult, error) {
	if err := CheckGuestPath("path", w.Path); err != nil {
		return WriteResult{}, err
	}
	if len(w.Data) > MaxWriteBytes {
		return WriteResult{}, coded.New(coded.InvalidArguments, map[string]any{"field": "content", "max": MaxWriteBytes},
			"content is %d bytes; at most %d per write", len(w.Data), MaxWriteBytes)
	}
	mapped, err := t.mapPath(w.Path)
	if err != nil {
		return WriteResult{}, err
	}
	mode := `m=$(stat -L -c %a -- "$f" 2>/dev/null || stat -L -f %Lp -- "$f" 2>/dev/null) || m=644` + "\n"
	if w.Mode != nil {
		mode = "m=" + octal(*w.Mode) + "\n"
	}
	parents := `[ -e "$d" ] && exit 5; exit 3`
	if w.MakeParents {
		parents = `mkdir -p -- "$d" || exit 1`
	}
	res, err := t.runFS(ctx, fsScript{tool: "write_file", path: w.Path, stdin: w.Data,
		vars: [][2]string{{"f", mapped}, {"d", path.Dir(mapped)}}, body: `[ -d "$f" ] && [ ! -L "$f" ] && exit 4
[ -d "$d" ] || { ` + parents + `; }
[ -w "$d" ] || exit 6
` + mode + `t=$(mktemp "$d/.sbf-write.XXXXXX") || exit 1
trap 'rm -f -- "$t"' EXIT
cat > "$t" && chmod "$m" "$t" && mv -f -- "$t" "$f" || exit 1
echo "$m"`})
	if err != nil {
		return WriteResult{}, err
	}
	return WriteResult{Path: w.Path, Bytes: len(w.Data), Mode: fmtMode(strings.TrimSpace(res.Stdout))}, nil
}

// octal renders permissions as chmod takes them (setuid, setgid and
// sticky included).
func octal(m fs.FileMode) string {
	v := uint64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return strconv.FormatUint(v, 8)
}

// fmtMode renders the guest's octal permissions with a leading 0 (0644).
func fmtMode(m string) string {
	if v, err := strconv.ParseUint(m, 8, 32); err == nil {
		return fmt.Sprintf("%04o", v)
	}
	return m
}

// ParseMode reads a mode a caller gave as octal text: "644", "0644",
// "0o644"; at most 07777.
func ParseMode(field, s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O"), 8, 32)
	if err != nil || v > 0o7777 {
		return 0, coded.New(coded.InvalidArguments, map[string]any{"field": field},
			"%s must be octal permissions such as \"0644\", not %q", field, coded.Clip(s))
	}
	m := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m, nil
}
