package cli

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
)

// progress prints each action as it starts and ends and, while any runs
// longer than a heartbeat (a VM boot under emulation takes minutes), a
// line saying what is still running and for how long.
type progress struct {
	w         io.Writer
	heartbeat time.Duration
	now       func() time.Time

	mu      sync.Mutex
	running map[string]time.Time // "sandbox: kind" → start
	stop    chan struct{}
}

func newProgress(w io.Writer, heartbeat time.Duration) *progress {
	return &progress{w: w, heartbeat: heartbeat, now: time.Now, running: map[string]time.Time{}}
}

// event is the executor's Events callback.
func (p *progress) event(ev reconcile.Event) {
	if ev.Lease != nil {
		return // a lease end recorded is no step: the command's result says it
	}
	key := fmt.Sprintf("%s: %s", ev.Sandbox, ev.Kind)
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Message != "" {
		fmt.Fprintf(p.w, "%s: %s\n", key, termsafe.Text(ev.Message))
		return
	}
	switch {
	case !ev.Done:
		p.running[key] = p.now()
		fmt.Fprintf(p.w, "%s...\n", key)
		if p.stop == nil {
			p.stop = make(chan struct{})
			go p.beat(p.stop)
		}
	case ev.Err != nil:
		delete(p.running, key)
		fmt.Fprintf(p.w, "%s failed after %s\n", key, ev.Elapsed.Round(time.Millisecond))
	default:
		delete(p.running, key)
		fmt.Fprintf(p.w, "%s done (%s)\n", key, ev.Elapsed.Round(time.Millisecond))
	}
	if len(p.running) == 0 && p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

func (p *progress) beat(stop chan struct{}) {
	t := clock.Real{}.NewTicker(p.heartbeat) // a person waits in real time
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			p.mu.Lock()
			keys := make([]string, 0, len(p.running))
			for k := range p.running {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(p.w, "%s still running (%s)\n", k, p.now().Sub(p.running[k]).Round(time.Second))
			}
			p.mu.Unlock()
		}
	}
}
