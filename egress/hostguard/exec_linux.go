//go:build linux && (amd64 || arm64)

package hostguard

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxforge/sbf/internal/clock"
)

// probeWord is what the supervisor must read in the launcher's memory
// before the guarded program starts.
var probeWord uint64 = 0x5bf6_0a4d_c0de_f00d

// Launch is one guarded exec: the program (QEMU) and its supervisor.
type Launch struct {
	Path string   // the program to exec, absolute
	Argv []string // its whole argv, argv[0] included
	Env  []string
	// Supervisor runs `sbf egress-guard` given ConfigPath.
	Supervisor []string
	Config     Config
	ConfigPath string
	// Stderr receives the supervisor's own messages (its file is kept open).
	Stderr *os.File
	Clock  clock.Clock
	// ReadyWait bounds the wait for the supervisor (10s).
	ReadyWait time.Duration
}

// Exec installs the guard on this thread, starts the supervisor, and execs
// the program, which then runs with every connect and addressed send
// judged. It returns only on failure, before the program started.
//
// Call it from the main goroutine of a process whose init locked it to the
// main thread (cmd/sbf does for egress-qemu): Yama (ptrace_scope 1) lets
// the supervisor read the program's memory only through PR_SET_PTRACER,
// which holds across exec only when the main thread execs.
func Exec(l Launch) error {
	runtime.LockOSThread() // never unlocked: this thread becomes the program
	if l.Clock == nil {
		l.Clock = clock.Real{}
	}
	if scope := yamaScope(); scope >= 2 || scope == 1 && unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("the host guard cannot read QEMU's memory: kernel.yama.ptrace_scope is %d "+
			"(it needs 0, or 1 from the process's main thread)", scope)
	}
	l.Config.ProbePID, l.Config.ProbeValue = os.Getpid(), probeWord
	l.Config.ProbeAddr = uint64(uintptr(unsafe.Pointer(&probeWord)))
	if err := writeConfig(l.ConfigPath, l.Config); err != nil {
		return err
	}
	fd, err := install()
	if err != nil {
		return err
	}
	listener := os.NewFile(uintptr(fd), "seccomp-listener")
	err = startSupervisor(l, listener)
	// Only the supervisor holds the listener now: if it dies, every judged
	// call of the program fails (ENOSYS) instead of passing.
	listener.Close()
	if err != nil {
		return err
	}
	return syscall.Exec(l.Path, l.Argv, l.Env)
}

// startSupervisor starts it from another thread than this one, so it does
// not inherit the filter, and waits until it can judge calls.
func startSupervisor(l Launch, listener *os.File) error {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer statusR.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return err
	}
	defer goW.Close()
	cmd := exec.Command(l.Supervisor[0], append(l.Supervisor[1:], l.ConfigPath)...)
	cmd.ExtraFiles = []*os.File{listener, statusW, goR}
	cmd.Stdout, cmd.Stderr = l.Stderr, l.Stderr
	proc.Detach(cmd) // no signal to QEMU's group reaches it
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }() // a goroutine never runs on a thread locked to another
	err = <-started
	statusW.Close()
	goR.Close()
	if err != nil {
		return fmt.Errorf("starting the host guard %v: %w", l.Supervisor, err)
	}
	go cmd.Wait() // reaps it if it fails now; after exec, QEMU inherits it
	// Yama: let the supervisor read this process's memory, before and after exec.
	unix.Prctl(unix.PR_SET_PTRACER, uintptr(cmd.Process.Pid), 0, 0, 0)
	goW.Close()
	return waitReady(l, statusR, cmd.Process)
}

func waitReady(l Launch, statusR *os.File, p *os.Process) error {
	wait := l.ReadyWait
	if wait == 0 {
		wait = 10 * time.Second
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(statusR).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "ok" {
			return nil
		}
		p.Kill()
		if s == "" {
			s = "it exited without a word"
		}
		return errors.New("the host guard did not start: " + s)
	case <-l.Clock.After(wait):
		p.Kill()
		return fmt.Errorf("the host guard did not start within %s", wait)
	}
}

// yamaScope is kernel.yama.ptrace_scope, or -1 without Yama.
func yamaScope() int {
	data, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return -1
	}
	var n int
	if _, err := fmt.Sscan(string(data), &n); err != nil {
		return -1
	}
	return n
}
