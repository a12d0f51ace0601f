//go:build unix

package mcpcmd

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A blocking pipe, as a client hands its server, is read through the
// poller (a deadline works only there), and its flags are as they were
// after restore.
func TestStdinPipeIsReadThroughThePoller(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer r.Close()
	defer w.Close()
	if err := r.SetReadDeadline(time.Now()); err == nil {
		t.Fatal("the test's pipe is in the poller already")
	}
	in, restore := polledInput(r)
	polled, ok := in.(*os.File)
	if !ok || polled.SetReadDeadline(time.Now().Add(time.Minute)) != nil {
		t.Fatalf("stdin %T is not read through the poller", in)
	}
	w.WriteString("{}\n")
	buf := make([]byte, 3)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "{}\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	restore()
	if flags := fcntlFlags(t, r); flags&syscall.O_NONBLOCK != 0 {
		t.Errorf("the pipe is left non-blocking (flags %#x)", flags)
	}
	w.WriteString("x")
	if _, err := r.Read(buf[:1]); err != nil || buf[0] != 'x' {
		t.Errorf("the pipe after restore: %q, %v", buf[:1], err)
	}
}

// A file (or a terminal) is left alone.
func TestStdinFileIsLeftAlone(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, _ := polledInput(f); in != io.Reader(f) {
		t.Errorf("a file became %v", in)
	}
}

// fcntlFlags reads f's flags without Fd, which would make f blocking.
func fcntlFlags(t *testing.T, f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if err := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return flags
}

// A pipe the parent made non-blocking stays so.
func TestStdinNonBlockingPipeStaysNonBlocking(t *testing.T) {
	r, w, err := os.Pipe() // non-blocking, as os makes its pipes
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, restore := polledInput(r)
	restore()
	if flags := fcntlFlags(t, r); flags&syscall.O_NONBLOCK == 0 {
		t.Errorf("the pipe was made blocking (flags %#x)", flags)
	}
}
