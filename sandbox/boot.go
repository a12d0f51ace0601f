package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/progress"
)

// BootWait bounds how long a command waits for its sandbox's VM to boot:
// a start's own bound (limactl start --timeout).
const BootWait = 15 * time.Minute

// BootPoll is how often a wait for a boot asks the backend again.
const BootPoll = 2 * time.Second

// afterBoot runs run and, when it finds the sandbox's VM still booting
// (drivers.ErrBooting: nothing ran in the guest), waits for the boot,
// saying so, and runs it once more. A backend answers so without dialling
// (Lima reads its host agent's events), so the hot path pays nothing.
func afterBoot[T any](ctx context.Context, t *Target, run func() (T, error)) (T, error) {
	res, err := run()
	if !errors.Is(err, drivers.ErrBooting) {
		return res, err
	}
	if err := t.waitBooted(ctx); err != nil {
		return res, err
	}
	return run()
}

// waitBooted waits until the target's VM has booted, reporting to the
// context's progress listener at once and at every progress.Every what it
// waits for. It fails, INSTANCE_NOT_READY, when the VM stops or is gone
// meanwhile, or is still booting after BootWait.
func (t *Target) waitBooted(ctx context.Context) error {
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	inst, err := t.observe(ctx, drv)
	if err != nil || inst.Status != drivers.Booting {
		return err // it booted meanwhile (or is gone: the command says so)
	}
	var step atomic.Value // the beat's goroutine reads it
	step.Store(stepOf(inst))
	progress.Reportf(ctx, "sandbox %s is still booting (%s); the command runs once its guest is ready", t.Sandbox,
		stepOf(inst))
	stop := progress.Beat(ctx, t.Clock, func(waited time.Duration) string {
		return fmt.Sprintf("still waiting for sandbox %s to boot (%s so far): %s", t.Sandbox, waited, step.Load())
	})
	defer stop()
	start := t.Clock.Now()
	tick := t.Clock.NewTicker(BootPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C():
		}
		if inst, err = t.observe(ctx, drv); err != nil {
			return err
		}
		switch inst.Status {
		case drivers.Running:
			return nil
		case drivers.Booting:
			step.Store(stepOf(inst))
		default:
			return t.notReady(inst, "its VM is %s: it stopped while booting", inst.Status)
		}
		if waited := t.Clock.Now().Sub(start); waited >= BootWait {
			return t.notReady(inst, "it is still booting after %s (%s)", waited.Round(time.Second), stepOf(inst))
		}
	}
}

// observe is what the backend lists of the target's instance.
func (t *Target) observe(ctx context.Context, drv drivers.Driver) (drivers.Instance, error) {
	list, err := drv.List(ctx)
	if err != nil {
		return drivers.Instance{}, fmt.Errorf("asking the %s driver whether sandbox %s has booted: %w",
			t.DriverName, t.Sandbox, err)
	}
	for _, inst := range list {
		if inst.Name == t.Instance {
			return inst, nil
		}
	}
	return drivers.Instance{Name: t.Instance, Status: "absent"}, nil
}

func (t *Target) notReady(inst drivers.Instance, format string, args ...any) error {
	return coded.New(coded.InstanceNotReady, map[string]any{"sandbox": t.Sandbox, "instance": t.Instance,
		"status": string(inst.Status)}, "sandbox %s is not ready: %s", t.Sandbox, fmt.Sprintf(format, args...))
}

func stepOf(inst drivers.Instance) string {
	if inst.BootStep != "" {
		return inst.BootStep
	}
	return "its guest is not ready yet"
}
