package sshexec

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Every command runs in an SSH session of its own or on the guest shell,
// and sshd makes each session's first process the leader of a new POSIX
// session (setsid). Everything the command starts stays in that session,
// even what `timeout` moves to a process group of its own; only what
// calls setsid itself (sbf's background tasks) leaves it. So "every process
// of the command" is "every process of the session", and a signal reaches
// them all through a kill run on a second SSH session. The guest shell,
// the leader on that path, traps the forwarded signals, so it survives
// them and the next command still finds it.

// killSession is the guest command that sends sig to every process in
// the POSIX session led by pid, or to pid alone when it leads none (a
// login shell that did not exec its command). It signals the session's
// process groups (kill -- -PGID), as a terminal's Ctrl-C reaches its
// foreground group: each group's processes all have the signal before any
// of them runs again. Signalled one process at a time, a command's `sleep`
// could die and its shell run on past the end of its script before its own
// INT came, so that the shell's trap never ran. It reads /proc with awk
// (Debian's "required" mawk), needing neither procps nor anything sbf
// installs; cat skips processes that exit while it runs.
func killSession(pid int, sig drivers.Signal) string {
	return "kill -s " + string(sig) + " -- $(cat /proc/[0-9]*/stat 2>/dev/null | awk -v pid=" + strconv.Itoa(pid) +
		` '{ p = $1; sub(/.*\) /, ""); sess[p] = $4; group[p] = $3 }` +
		` END { if (sess[pid] != pid) { print pid; exit }` +
		` for (p in sess) if (sess[p] == pid && !(group[p] in seen)) { seen[group[p]] = 1; print "-" group[p] } }'` +
		") 2>/dev/null; true"
}

// signalSession delivers sig to the session leader leads in the instance, giving
// up after signalWait (the connection may be what failed). A KILL is sent
// because the command's ctx ended, so the delivery must outlive it: it keeps
// ctx's values (context.WithoutCancel) and is bounded by signalWait alone.
func (p *Pool) signalSession(ctx context.Context, instance string, leader int, sig drivers.Signal) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signalWait)
	defer cancel()
	if p.signalThroughMaster(ctx, instance, killSession(leader, sig)) {
		return
	}
	s, err := p.session(ctx, instance)
	if err != nil {
		return
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	s.Run(killSession(leader, sig))
}

const signalWait = 10 * time.Second

// signalThroughMaster runs kill on a session of the instance's master,
// when its shells run there (a connection of ours would cost a
// handshake first), and says whether it asked the master.
func (p *Pool) signalThroughMaster(ctx context.Context, instance, kill string) bool {
	p.mu.Lock()
	c, ok := p.conns[instance]
	master := ""
	if ok && c.client == nil {
		master = c.master
	}
	p.mu.Unlock()
	if master == "" {
		return false
	}
	s, err := openMasterSession(ctx, master, kill)
	if err != nil {
		return false
	}
	defer s.Close()
	s.stdin.Close()
	stop := context.AfterFunc(ctx, func() { s.ctl.Close() })
	defer stop()
	s.wait() // the kill was asked for: a second way would deliver it twice
	return true
}

// forwarder passes a request's signals to the command once its session
// leader is known, and can end the command outright.
type forwarder struct {
	ctx      context.Context // the command's: signals are delivered with its values
	p        *Pool
	instance string
	mu       sync.Mutex
	leader   int           // the command's session leader
	known    chan struct{} // closed once leader is set
	done     chan struct{}
}

func (p *Pool) forwarder(ctx context.Context, instance string) *forwarder {
	return &forwarder{ctx: ctx, p: p, instance: instance, known: make(chan struct{}), done: make(chan struct{})}
}

// learn records the command's session leader.
func (f *forwarder) learn(leader int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leader == 0 && leader > 0 {
		f.leader = leader
		close(f.known)
	}
}

func (f *forwarder) leaderPID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

// run forwards signals until stop; a signal that comes before the leader is
// known waits for it.
func (f *forwarder) run(signals <-chan drivers.Signal) (stop func()) {
	go func() {
		for {
			select {
			case sig := <-signals:
				select {
				case <-f.known:
					f.p.signalSession(f.ctx, f.instance, f.leaderPID(), sig)
				case <-f.done:
					return
				}
			case <-f.done:
				return
			}
		}
	}()
	return func() { close(f.done) }
}

// kill ends every process of the command: its context ended, and an
// abandoned command must not keep running in the guest. The leader names
// itself first thing, so it is waited for a moment.
func (f *forwarder) kill() {
	select {
	case <-f.known:
		f.p.signalSession(f.ctx, f.instance, f.leaderPID(), "KILL")
	case <-f.p.opts.Clock.After(2 * time.Second):
	}
}
