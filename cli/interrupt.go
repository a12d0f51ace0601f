package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/reconcile"

	"github.com/spf13/cobra"
)

// interrupts turns Ctrl-C and SIGTERM into the command's cancellation.
// While the engine carries out a plan, the first one stops it starting
// steps (those in flight finish and are recorded) and the second cancels
// them; otherwise the first cancels at once. A command that does not end
// soon after being cancelled is ended, so Ctrl-C always works.
type interrupts struct {
	stderr    io.Writer
	cancel    context.CancelFunc
	stop      chan struct{}
	mu        sync.Mutex
	applying  int  // plans being carried out
	stopping  bool // the first interrupt of an apply was heard
	cancelled bool
	exit      func(int) // os.Exit; tests replace it
}

// ownSignals are the commands that handle SIGINT and SIGTERM themselves:
// loops and servers that save their state on the way out (within a service
// manager's stop timeout), terminals and port forwards, the hidden helpers
// QEMU and Lima run, and sbf-server's handoffs; the backends' own commands
// too (handlesSignals).
var ownSignals = map[string]bool{"serve": true, "mcp": true, "reconcile": true, "port-forward": true,
	"shell": true, "exec": true, "exec-broker": true, "egress-proxy": true, "egress-qemu": true,
	"egress-relay": true}

// handlesSignals says whether cmd hears SIGINT and SIGTERM itself.
func handlesSignals(cmd *cobra.Command) bool {
	return ownSignals[cmd.Name()] || cmd.Annotations[backendCommand] != ""
}

// interruptGrace is how long a cancelled command may take to end: long
// enough to delete, at once, a VM it was making (a third Ctrl-C does not wait).
const interruptGrace = 30 * time.Second

// interruptible makes the context every command runs with: cancelled on
// the second interrupt (the first, outside an apply), and stopping a run's
// new steps on the first (reconcile.WithStop).
func interruptible(parent context.Context, stderr io.Writer) (context.Context, *interrupts) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{stderr: stderr, cancel: cancel, stop: make(chan struct{}), exit: os.Exit}
	return reconcile.WithStop(ctx, in.stop), in
}

// listen starts hearing SIGINT and SIGTERM, until the returned function is
// called. Commands that handle signals themselves (a loop that must save
// its state, a terminal) never call it.
func (in *interrupts) listen() func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				in.heard()
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// applyingPlan marks a plan being carried out, until done is called.
func (in *interrupts) applyingPlan() (done func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.applying++
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.applying--
	}
}

func (in *interrupts) heard() {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.applying > 0 && !in.stopping:
		in.stopping = true
		close(in.stop)
		fmt.Fprintln(in.stderr, "\nInterrupt received: finishing the steps in flight (Ctrl-C again to stop at once)…")
	case !in.cancelled:
		in.cancelled = true
		if in.stopping {
			fmt.Fprintln(in.stderr, "\nStopping now: the steps in flight are cancelled and a VM they were making is "+
				"deleted (Ctrl-C again to quit at once; the next sbf apply repairs what is left)…")
		}
		in.cancel()
		go func() {
			<-clock.Real{}.After(interruptGrace) // a process ends in real time, whatever "now" is
			in.exit(130)
		}()
	default:
		in.exit(130) // a third time: at once
	}
}

// interrupted says whether an interrupt ended or stopped the command.
func (in *interrupts) interrupted() bool {
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopping || in.cancelled
}
