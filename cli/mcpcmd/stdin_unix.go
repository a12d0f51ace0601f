//go:build unix

package mcpcmd

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// polledInput reads a stdio server's requests through Go's poller when
// its stdin is a pipe or a socket (what an MCP client connects), so that
// waiting for the next request parks a goroutine rather than holding a
// thread in read(2). A thread held in a blocking read keeps the runtime's
// monitor thread (sysmon) waking every 20 µs to 10 ms to see whether to
// take its P away, and restarting from 20 µs after it does: measured on
// a real VM under emulation, run_command cost the server 1,830-2,220 µs
// of CPU a call that way against 1,630-1,730 µs polled (four runs each,
// 600 calls a run; docs/performance.md). The descriptor read is a
// duplicate; the non-blocking flag, which belongs to the open pipe that
// the parent may share, is cleared again by restore. (A pipe that was
// non-blocking already is in the poller as it is.)
func polledInput(in io.Reader) (r io.Reader, restore func()) {
	f, ok := in.(*os.File)
	if !ok || f.SetReadDeadline(time.Time{}) == nil { // only a file in the poller takes a deadline
		return in, func() {}
	}
	fd := int(f.Fd()) // blocking already, which is what Fd would make it
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil ||
		st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return in, func() {} // a terminal or a file: a person's, whose flags stay as they are
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return in, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return in, func() {}
	}
	polled := os.NewFile(uintptr(dup), f.Name()) // non-blocking: os puts it in the poller
	return polled, func() {
		polled.Close()
		unix.SetNonblock(fd, false)
	}
}
