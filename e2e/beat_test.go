//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/progress"
)

// lastLine keeps the last complete line written to it: what a command
// said last, for the suite's heartbeat.
type lastLine struct {
	mu      sync.Mutex
	partial []byte
	last    string
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	if i := bytes.LastIndexByte(l.partial, '\n'); i >= 0 {
		lines := strings.Split(strings.TrimSpace(string(l.partial[:i])), "\n")
		l.last = lines[len(lines)-1]
		l.partial = append(l.partial[:0], l.partial[i+1:]...)
	}
	if len(l.partial) > 4096 {
		l.partial = l.partial[len(l.partial)-4096:]
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// beat says on the suite's stderr, at progress.Every while an sbf command
// runs, which command the suite waits for and what it said last: a boot
// under emulation takes minutes, and the command's own output is kept
// until it ends.
func beat(args []string, said *lastLine) (stop func()) {
	start := time.Now()
	t := time.NewTicker(progress.Every)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "e2e: still waiting for sbf %s (%s): %s\n", strings.Join(args, " "),
					time.Since(start).Round(time.Second), said.String())
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}
