//go:build linux && (amd64 || arm64)

package hostguard

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Supervisor judges the guarded calls of one QEMU and the processes it
// starts.
type Supervisor struct {
	cfg   Config
	log   *egress.Log
	clock clock.Clock
	hosts hostCache
	agent agent
}

// Supervise is `sbf egress-guard CONFIG`: it takes the listener and pipes
// the launcher started it with (fds 3-5), checks it can read the guarded
// process's memory, says so, and judges calls until no guarded process is
// left. It returns an error only when it could not start.
func Supervise(cfg Config, clk clock.Clock) error {
	status := os.NewFile(fdStatus, "status")
	s, err := start(cfg, clk)
	if err != nil {
		fmt.Fprintf(status, "%v\n", err)
		return err
	}
	defer s.log.Close()
	if _, err := status.WriteString("ok\n"); err != nil {
		return fmt.Errorf("telling the launcher the guard is ready: %w", err)
	}
	status.Close()
	return s.serve(fdListener)
}

func start(cfg Config, clk clock.Clock) (*Supervisor, error) {
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = ResolvConf
	}
	if cfg.PIDFile != "" {
		if err := os.WriteFile(cfg.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("writing the host guard's PID file: %w", err)
		}
	}
	lg, err := egress.OpenLog(cfg.LogPath, 0)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, log: lg, clock: clk, agent: openAgent(cfg.AgentPID)}
	s.hosts.watch()
	// The launcher closes its end once this process may read its memory
	// (Yama's PR_SET_PTRACER); the probe proves it before QEMU starts.
	goPipe := os.NewFile(fdGo, "go")
	goPipe.Read(make([]byte, 1))
	goPipe.Close()
	if err := checkProbe(cfg); err != nil {
		lg.Close()
		return nil, err
	}
	return s, nil
}

// checkProbe reads the launcher's probe word through /proc/PID/mem, as
// each judged call's address will be read.
func checkProbe(cfg Config) error {
	f, err := os.Open("/proc/" + strconv.Itoa(cfg.ProbePID) + "/mem")
	if err == nil {
		defer f.Close()
		got, rerr := callerMemory{f: f}.read(cfg.ProbeAddr, 8)
		switch {
		case rerr != nil:
			err = rerr
		case nativeUint64(got) != cfg.ProbeValue:
			err = fmt.Errorf("read %#x, want %#x", nativeUint64(got), cfg.ProbeValue)
		}
	}
	if err != nil {
		return fmt.Errorf("the host guard cannot read the memory of the process it guards (is "+
			"/proc/sys/kernel/yama/ptrace_scope above 1?): %w", err)
	}
	return nil
}

// serve answers notifications until the filter has no process left (the
// listener then polls as hung up).
func (s *Supervisor) serve(listener int) error {
	for {
		fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("waiting for guarded calls: %w", err)
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return nil // POLLHUP: QEMU and every process it started are gone
		}
		n, err := recvNotif(listener)
		if err != nil {
			continue // ENOENT: the caller was interrupted before it was read
		}
		s.handle(listener, n)
	}
}

func (s *Supervisor) handle(listener int, n notif) {
	resp := notifResp{ID: n.ID}
	ok, to, reason := s.judge(listener, n)
	if ok {
		resp.Flags = flagContinue
	} else {
		resp.Error = -int32(unix.EACCES)
		if uint64(n.Data.Nr) == unix.SYS_CONNECT {
			resp.Error = -int32(unix.ECONNREFUSED)
		}
		s.refused(n, to, reason)
	}
	sendResp(listener, resp) // ENOENT: the caller is gone; nothing to answer
}

// judge reads the addresses of a call and decides it: every address must
// pass. An address that cannot be read is refused.
func (s *Supervisor) judge(listener int, n notif) (bool, target, string) {
	mem, err := openCaller(listener, n)
	if err != nil {
		return false, target{}, err.Error()
	}
	defer mem.Close()
	targets, err := mem.targets(n.Data)
	if err != nil {
		return false, target{}, err.Error()
	}
	host, err := s.hosts.get()
	if err != nil {
		return false, target{}, err.Error()
	}
	rules := s.cfg.Rules
	for _, t := range targets {
		if t.family == afInet || t.family == afInet6 {
			if t.addr.Port() == 53 && rules.Nameservers == nil {
				rules.Nameservers = readNameservers(s.cfg.ResolvConf)
			}
		}
		ok, reason := rules.judgeTarget(t, host)
		if !ok && !s.ownListener(n, t) {
			return false, t, reason
		}
	}
	return true, target{}, ""
}

// ownListener says whether a refused target on this host is a listener of
// the caller itself (a TCP connect only: libslirp's socket pair) or one of
// Lima's host agent (its DNS server and port forwards, TCP or UDP).
func (s *Supervisor) ownListener(n notif, t target) bool {
	addr := t.addr.Addr().Unmap()
	if t.family != afInet && t.family != afInet6 || !addr.IsLoopback() && !addr.IsUnspecified() {
		return false
	}
	tcp := uint64(n.Data.Nr) == unix.SYS_CONNECT
	return tcp && processListens(int(n.PID), true, t.addr) || s.agent.listens(tcp, t.addr)
}

func (s *Supervisor) refused(n notif, to target, reason string) {
	e := egress.Entry{Time: s.clock.Now(), Sandbox: s.cfg.Sandbox, Decision: egress.Denied,
		Method: callName(uint64(n.Data.Nr)), Reason: "host guard: " + reason}
	if to.addr.IsValid() {
		e.Host, e.Port, e.Addr = to.addr.Addr().String(), int(to.addr.Port()), to.addr.String()
	}
	s.log.Write(e)
}

func callName(nr uint64) string {
	switch nr {
	case unix.SYS_CONNECT:
		return "connect"
	case unix.SYS_SENDTO:
		return "sendto"
	case unix.SYS_SENDMSG:
		return "sendmsg"
	case unix.SYS_SENDMMSG:
		return "sendmmsg"
	}
	return "syscall " + strconv.FormatUint(nr, 10)
}

// hostCache keeps this host's addresses, listed again after the kernel
// announces an address change (or at every call when it cannot listen
// for announcements).
type hostCache struct {
	stale    atomic.Bool
	watching atomic.Bool
	host     Host
	err      error
}

func (c *hostCache) get() (Host, error) {
	if !c.watching.Load() || c.stale.Swap(false) || c.err != nil {
		c.host, c.err = CurrentHost()
		if c.err != nil {
			c.err = fmt.Errorf("listing this host's addresses: %w", c.err)
		}
	}
	return c.host, c.err
}

// watch subscribes to the kernel's address announcements (before the
// first listing, so none is missed between the two).
func (c *hostCache) watch() {
	c.stale.Store(true)
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return
	}
	sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return
	}
	c.watching.Store(true)
	go func() {
		buf := make([]byte, 16<<10)
		for {
			_, _, err := unix.Recvfrom(fd, buf, 0)
			c.stale.Store(true) // ENOBUFS too: announcements were lost
			if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.ENOBUFS) {
				c.watching.Store(false)
				unix.Close(fd)
				return
			}
		}
	}()
}
