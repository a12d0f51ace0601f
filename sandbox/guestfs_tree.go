package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Entry is one guest path as the guest's lstat sees it.
type Entry struct {
	Path       string    `json:"path"` // relative to the listed folder; the path itself for stat_path
	Type       string    `json:"type"` // file, directory, symlink or other
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"` // octal permissions, 0644
	Modified   time.Time `json:"modified"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// entryFn prints one entry as "TYPE SIZE MODE MTIME\0NAME\0": GNU and
// busybox stat take -c, BSD stat (a sim on macOS) -f. Names go through
// printf %s, so any byte but NUL survives.
const entryFn = `sbf_entry() {
  if [ -L "$1" ]; then t=l; elif [ -d "$1" ]; then t=d; elif [ -f "$1" ]; then t=f; else t=o; fi
  s=$(stat -c '%s %a %Y' -- "$1" 2>/dev/null || stat -f '%z %Lp %m' -- "$1" 2>/dev/null) || return 0
  printf '%s %s\0%s\0' "$t" "$s" "$2"
}
`

// listScript lists below the folder $f: with GNU find in one process,
// elsewhere with one stat per entry. head ends find early once enough has
// been printed.
func listScript(depth string, maxBytes int) string {
	return `cd -- "$f" || exit 6
if find . -maxdepth 0 -printf '' >/dev/null 2>&1; then
  ` + gnuList(depth) + `
else
  ` + portableList(depth) + `
fi 2>/dev/null | head -c ` + strconv.Itoa(maxBytes) + "\n"
}

func gnuList(depth string) string {
	return `find . -mindepth 1 ` + depth + ` -printf '%y %s %m %T@\0%P\0'`
}

func portableList(depth string) string {
	return `find . -mindepth 1 ` + depth + ` -exec sh -c '` + strings.ReplaceAll(entryFn, "'", `'\''`) +
		`for e; do sbf_entry "$e" "${e#./}"; done' sh {} +`
}

// Listing is a guest folder's entries, sorted by path.
type Listing struct {
	Path      string
	Entries   []Entry
	Truncated bool // there were more than the limit
}

// ListFiles lists a guest folder: its entries, or with recursive every
// path below it; at most limit (DefaultListLimit when ≤ 0, at most
// MaxListLimit).
func (t *Target) ListFiles(ctx context.Context, p string, recursive bool, limit int) (Listing, error) {
	if err := CheckGuestPath("path", p); err != nil {
		return Listing{}, err
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	if limit > MaxListLimit {
		return Listing{}, coded.New(coded.InvalidArguments, map[string]any{"field": "limit", "max": MaxListLimit},
			"limit is at most %d entries", MaxListLimit)
	}
	mapped, err := t.mapPath(p)
	if err != nil {
		return Listing{}, err
	}
	depth := "-maxdepth 1"
	if recursive {
		depth = ""
	}
	maxBytes := limit * 256
	res, err := t.runFS(ctx, fsScript{tool: "list_files", path: p, vars: [][2]string{{"f", mapped}},
		maxOut: maxBytes + 64, body: `[ -e "$f" ] || exit 3
[ -d "$f" ] || exit 5
[ -r "$f" ] && [ -x "$f" ] || exit 6
` + listScript(depth, maxBytes)})
	if err != nil {
		return Listing{}, err
	}
	entries, cut := parseEntries(res.Stdout)
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	out := Listing{Path: p, Entries: entries, Truncated: cut || len(res.Stdout) >= maxBytes}
	if len(out.Entries) > limit {
		out.Entries, out.Truncated = out.Entries[:limit], true
	}
	return out, nil
}

// parseEntries reads "TYPE SIZE MODE MTIME\0NAME\0" records; cut says a
// last record was incomplete (the output was cut).
func parseEntries(out string) (entries []Entry, cut bool) {
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		e, ok := parseEntry(fields[i], fields[i+1])
		if ok {
			entries = append(entries, e)
		}
	}
	return entries, len(fields)%2 == 0 || fields[len(fields)-1] != ""
}

func parseEntry(meta, name string) (Entry, bool) {
	f := strings.Fields(meta)
	if len(f) != 4 || name == "" {
		return Entry{}, false
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	secs, err2 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil {
		return Entry{}, false
	}
	whole, frac := math.Modf(secs)
	return Entry{Path: name, Type: typeName(f[0]), Size: size, Mode: fmtMode(f[2]),
		Modified: time.Unix(int64(whole), int64(frac*1e9)).UTC().Truncate(time.Millisecond)}, true
}

func typeName(c string) string {
	switch c {
	case "f":
		return "file"
	case "d":
		return "directory"
	case "l":
		return "symlink"
	}
	return "other"
}

// StatPath describes a guest path without following a link there; ok is
// false when nothing is there.
func (t *Target) StatPath(ctx context.Context, p string) (Entry, bool, error) {
	if err := CheckGuestPath("path", p); err != nil {
		return Entry{}, false, err
	}
	mapped, err := t.mapPath(p)
	if err != nil {
		return Entry{}, false, err
	}
	res, err := t.runFS(ctx, fsScript{tool: "stat_path", path: p, vars: [][2]string{{"f", mapped}},
		body: `[ -e "$f" ] || [ -L "$f" ] || { echo absent; exit 0; }
` + entryFn + `sbf_entry "$f" x
[ -L "$f" ] && readlink -- "$f"
exit 0`})
	if err != nil {
		return Entry{}, false, err
	}
	if res.Stdout == "absent\n" {
		return Entry{}, false, nil
	}
	fields := strings.SplitN(res.Stdout, "\x00", 3)
	e, ok := parseEntry(fields[0], "x")
	if len(fields) < 3 || !ok {
		return Entry{}, false, fmt.Errorf("stat_path %s: the guest answered %q", coded.Clip(p), coded.Clip(res.Stdout))
	}
	e.Path = p
	if e.Type == "symlink" {
		e.LinkTarget = strings.TrimSuffix(fields[2], "\n")
	}
	return e, true, nil
}

// checkRemovable refuses the paths whose removal would take the guest's
// root or the folder commands start in.
func checkRemovable(p string) error {
	switch path.Clean(p) {
	case "/", ".", "..":
		return coded.New(coded.InvalidArguments, map[string]any{"field": "path"},
			"refusing to remove %q: it is the guest's root or the home folder", p)
	}
	return nil
}

// RemovePath removes a guest file, link or empty folder, or with
// recursive a folder and everything in it. existed is false when nothing
// was there (that is no error: the path is gone either way).
func (t *Target) RemovePath(ctx context.Context, p string, recursive bool) (existed bool, err error) {
	if err := CheckGuestPath("path", p); err != nil {
		return false, err
	}
	if err := checkRemovable(p); err != nil {
		return false, err
	}
	mapped, err := t.mapPath(p)
	if err != nil {
		return false, err
	}
	dir := `rmdir -- "$f" 2>/dev/null || { [ -n "$(ls -A -- "$f")" ] && exit 8; exit 6; }`
	if recursive {
		dir = `rm -rf -- "$f" || exit 6`
	}
	res, err := t.runFS(ctx, fsScript{tool: "remove_path", path: p, vars: [][2]string{{"f", mapped}},
		body: `[ -e "$f" ] || [ -L "$f" ] || { echo absent; exit 0; }
if [ -d "$f" ] && [ ! -L "$f" ]; then ` + dir + `; else rm -f -- "$f" || exit 6; fi`})
	return err == nil && res.Stdout != "absent\n", err
}

// MakeDir creates a guest folder with mode (0755 when nil), and with
// parents every missing folder above it. created is false when the
// folder was already there.
func (t *Target) MakeDir(ctx context.Context, p string, mode *fs.FileMode, parents bool) (created bool, err error) {
	if err := CheckGuestPath("path", p); err != nil {
		return false, err
	}
	mapped, err := t.mapPath(p)
	if err != nil {
		return false, err
	}
	m := "755"
	if mode != nil {
		m = octal(*mode)
	}
	mk := `[ -d "$d" ] || exit 3
mkdir -m ` + m + ` -- "$f" || exit 6`
	if parents {
		mk = `mkdir -p -- "$f" && chmod ` + m + ` "$f" || exit 6`
	}
	res, err := t.runFS(ctx, fsScript{tool: "make_dir", path: p,
		vars: [][2]string{{"f", mapped}, {"d", path.Dir(mapped)}}, body: `[ -d "$f" ] && { echo exists; exit 0; }
[ -e "$f" ] || [ -L "$f" ] && exit 7
` + mk})
	return err == nil && res.Stdout != "exists\n", err
}
