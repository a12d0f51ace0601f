// Package supervisor is `sbf vz-run DIR`: the process that owns one vz
// instance's VM, because a VM lives only as long as the process that
// created it. It boots the machine an instance folder (package layout)
// describes, answers status and stop requests on the folder's control
// socket, and writes down why the machine failed. The vz driver starts
// one detached per running instance and talks to it only through Query
// and Stop.
//
// Only hypervisor_darwin.go calls Virtualization.framework; everything
// else is plain Go, tested on any host against a fake Hypervisor
// (supervisortest).
package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

const (
	// DefaultStopTimeout is how long a clean stop may take before the
	// machine is stopped by force, when the request does not say.
	DefaultStopTimeout = 30 * time.Second
	// ForcedStopWait bounds the wait for the framework after a forced
	// stop: a Stop call takes up to its timeout and this much more.
	ForcedStopWait = 30 * time.Second
	// lockWait bounds the wait for the previous supervisor of an instance
	// to end.
	lockWait = 10 * time.Second
)

// Run boots the instance in dir on Virtualization.framework and keeps it
// running until the guest powers off, a stop request arrives on its
// control socket, or ctx ends (sbf vz-run cancels it on SIGTERM and
// SIGINT); either of the last two stops the guest cleanly, by force after
// a timeout. It is what `sbf vz-run DIR` runs, detached from the sbf that
// started it.
func Run(ctx context.Context, dir string) error {
	if framework == nil {
		return errors.New(frameworkMissing)
	}
	return RunWith(ctx, dir, framework, clock.Real{})
}

// RunWith is Run on the hypervisor hv, timing stops on clock c.
func RunWith(ctx context.Context, dir string, hv Hypervisor, c clock.Clock) error {
	f, err := layout.At(dir)
	if err != nil {
		return err
	}
	// A supervisor that was just asked to stop may not have let go yet
	// when Start launches the next one.
	holder := flock.Holder{Command: "sbf vz-run", PID: os.Getpid(), Since: c.Now()}
	lock, err := flock.Acquire(ctx, ownfile.PathFile(f.Path(layout.LockFile)), holder, lockWait)
	if err != nil {
		return fmt.Errorf("supervising %s: %w", f.Name, err)
	}
	defer lock.Release()
	os.Remove(f.Path(layout.FailureFile))
	if err := os.WriteFile(f.Path(layout.PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing the pid file of %s: %w", f.Name, err)
	}
	defer os.Remove(f.Path(layout.PIDFile))
	s := &supervisor{f: f, clock: c, state: StateStarting, stopReq: make(chan request), stopped: make(chan struct{})}
	err = s.run(ctx, hv)
	if err != nil {
		// Start reports this instead of waiting for a machine that is gone.
		os.WriteFile(f.Path(layout.FailureFile), []byte(err.Error()+"\n"), 0o644)
	}
	return err
}

// supervisor is one running `sbf vz-run`.
type supervisor struct {
	f     layout.Folder
	clock clock.Clock
	mac   string

	mu    sync.Mutex
	state string
	err   string

	stopReq chan request
	stopped chan struct{} // closed once the machine is gone
	conns   sync.WaitGroup
}

func (s *supervisor) run(ctx context.Context, hv Hypervisor) error {
	cfg, err := s.f.ReadConfig()
	if err != nil {
		return err
	}
	mc, err := machine(s.f, cfg)
	if err != nil {
		return err
	}
	s.mac = cfg.MAC
	ln, err := s.listen()
	if err != nil {
		return err
	}
	defer s.shutdown(ln)
	go s.serve(ln)
	m, err := hv.Boot(ctx, mc)
	if err != nil {
		s.set(StateStopped, err)
		return fmt.Errorf("booting %s: %w", s.f.Name, err)
	}
	s.set(StateRunning, nil)
	var r request
	select {
	case err := <-m.Done():
		s.set(StateStopped, err)
		return err
	case r = <-s.stopReq:
	case <-ctx.Done():
	}
	s.set(StateStopping, nil)
	err = s.stop(m, r)
	s.set(StateStopped, err)
	return err
}

// stop asks the guest to power off and waits for it, then stops the
// machine by force if the guest did not, or if the request said so.
func (s *supervisor) stop(m Machine, r request) error {
	timeout := DefaultStopTimeout
	if r.TimeoutMS > 0 {
		timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	}
	if !r.Force && m.RequestStop() == nil {
		select {
		case <-m.Done():
			return nil
		case <-s.clock.After(timeout):
		}
	}
	if err := m.Stop(); err != nil {
		return fmt.Errorf("stopping %s by force: %w", s.f.Name, err)
	}
	select {
	case <-m.Done():
		return nil
	case <-s.clock.After(ForcedStopWait):
		return fmt.Errorf("%s did not stop within %s of a forced stop", s.f.Name, ForcedStopWait)
	}
}

func (s *supervisor) set(state string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = state
	if err != nil {
		s.err = err.Error()
	}
}

func (s *supervisor) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{State: s.state, PID: os.Getpid(), MAC: s.mac, Error: s.err}
}

// listen opens the control socket; any socket file already there is a
// crashed supervisor's, since this one holds the lock.
func (s *supervisor) listen() (net.Listener, error) {
	sock := s.f.Socket()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return nil, fmt.Errorf("creating the folder of %s: %w", sock, err)
	}
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", sock, err)
	}
	return ln, nil
}

// shutdown answers the stop requests still waiting, then closes the socket.
func (s *supervisor) shutdown(ln net.Listener) {
	close(s.stopped)
	ln.Close()
	s.conns.Wait()
	os.Remove(s.f.Socket())
}

func (s *supervisor) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer conn.Close()
			s.handle(conn)
		}()
	}
}

func (s *supervisor) handle(conn net.Conn) {
	// A client that never sends its request must not hold up shutdown;
	// the socket is local, so real time, whatever the clock says.
	conn.SetReadDeadline(clock.Real{}.Now().Add(10 * time.Second))
	var r request
	if err := json.NewDecoder(conn).Decode(&r); err != nil {
		return
	}
	if r.Op == "stop" {
		select {
		case s.stopReq <- r:
		case <-s.stopped:
		}
		<-s.stopped
	}
	json.NewEncoder(conn).Encode(s.status())
}
