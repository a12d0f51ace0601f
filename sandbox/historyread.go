package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"
)

// historyChunk is how much of a history file a read for the newest events
// takes at a time, from the end.
const historyChunk = 64 << 10

// Read returns the newest limit events that keep says to (all when keep
// is nil; all of them when limit ≤ 0), oldest first. Lines that do not
// parse are skipped. With a limit the files are read from their end, so
// the newest few cost what they hold, not what the history holds.
func (h History) Read(keep func(Event) bool, limit int) ([]Event, error) {
	var newest []Event // newest first
	for _, name := range []string{HistoryFile, HistoryFile + ".1"} {
		err := h.readBackwards(name, func(line []byte) bool {
			var ev Event
			if json.Unmarshal(line, &ev) == nil && (keep == nil || keep(ev)) {
				newest = append(newest, ev)
			}
			return limit <= 0 || len(newest) < limit
		})
		if err != nil {
			return nil, err
		}
		if limit > 0 && len(newest) >= limit {
			break
		}
	}
	slices.Reverse(newest)
	return newest, nil
}

// holds says whether a line same accepts is among the newest lines, back
// to the first that ended before since.
func (h History) holds(same func(Event) bool, since time.Time) (bool, error) {
	found := false
	for _, name := range []string{HistoryFile, HistoryFile + ".1"} {
		past := false
		err := h.readBackwards(name, func(line []byte) bool {
			var ev Event
			if json.Unmarshal(line, &ev) != nil {
				return true
			}
			found = same(ev)
			past = ev.Time.Add(time.Duration(ev.DurationMS) * time.Millisecond).Before(since)
			return !found && !past
		})
		if err != nil || found || past {
			return found, err
		}
	}
	return false, nil
}

// readBackwards hands each line of history file name to each, newest
// first, until each says to stop or the file's start. It reads at most
// maxRead bytes of the file, a chunk at a time from its end.
func (h History) readBackwards(name string, each func(line []byte) bool) error {
	f, err := h.own().OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	start := max(0, info.Size()-h.maxRead())
	var carry []byte // the start of a line the chunk read last began within
	for pos := info.Size(); pos > start; {
		n := min(historyChunk, pos-start)
		pos -= n
		buf := make([]byte, n, n+int64(len(carry)))
		if _, err := f.ReadAt(buf, pos); err != nil {
			return fmt.Errorf("reading the history: %w", err)
		}
		buf = append(buf, carry...)
		if pos > start { // the first line may begin in the chunk before
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				carry = buf
				continue
			}
			carry, buf = buf[:i], buf[i+1:]
		}
		if !eachLine(buf, each) || len(carry) > 1<<20 { // no line sbf writes is this long
			return nil
		}
	}
	return nil
}

// eachLine hands the lines of buf to each, last first, until it says stop.
func eachLine(buf []byte, each func([]byte) bool) bool {
	lines := bytes.Split(buf, []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		if line := bytes.TrimSpace(lines[i]); len(line) > 0 && !each(line) {
			return false
		}
	}
	return true
}
