package cli

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// deadConnection is a driver whose kept connection never answers a check:
// its VM went away before the broker's first check could see it up.
type deadConnection struct{}

func (deadConnection) Exec(context.Context, string, drivers.ExecRequest) (drivers.ExecResult, error) {
	return drivers.ExecResult{}, nil
}
func (deadConnection) Alive(string) bool { return false }
func (deadConnection) Close() error      { return nil }

// A sandbox destroyed within one check of its broker's first command (a
// fork's child run once and destroyed) ends its broker at the next check;
// a broker that never ran a command nor saw its connection up waits, as a
// VM still booting is not gone.
func TestABrokerWhoseVMWentBeforeItsFirstCheckEnds(t *testing.T) {
	t.Parallel()
	for _, ran := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var stopped atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchConnection(ctx, func() { stopped.Store(true) }, deadConnection{}, "vm",
				func() bool { return ran }, 20*time.Millisecond)
		}()
		<-done
		cancel()
		if stopped.Load() != ran {
			t.Errorf("a command ran: %v; the broker ended: %v (want %v)", ran, stopped.Load(), ran)
		}
	}
}
