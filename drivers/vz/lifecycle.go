package vz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
)

// supervisorWait bounds how long a new supervisor may take to boot the
// machine (the framework's start, not the guest's boot).
const supervisorWait = 2 * time.Minute

// Start boots a stopped instance under a new supervisor and waits until
// the guest answers SSH with cloud-init done; a running one is only
// waited for.
func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	f := d.folder(s.Name)
	if err := d.bootable(f); err != nil {
		return err
	}
	if st, err := d.status(ctx, f); err != nil || !st.Up() {
		if err := d.startSupervisor(ctx, f); err != nil {
			return err
		}
	}
	return d.waitReady(ctx, f)
}

// bootable says why an instance cannot be started, if it cannot.
func (d *Driver) bootable(f layout.Folder) error {
	if !f.Exists() {
		return fmt.Errorf("vz instance %s: %w", f.Name, drivers.ErrNotFound)
	}
	c, err := f.ReadConfig()
	if err != nil {
		return fmt.Errorf("vz instance %s is broken (an unfinished create): %w", f.Name, err)
	}
	if m := f.Missing(c); m != "" {
		return fmt.Errorf("vz instance %s is broken: %s is missing", f.Name, f.Path(m))
	}
	return nil
}

func (d *Driver) startSupervisor(ctx context.Context, f layout.Folder) error {
	os.Remove(f.Path(layout.FailureFile))
	drivers.Progressf(ctx, "starting %s", f.Name)
	if err := d.opts.StartSupervisor(f.Dir()); err != nil {
		return fmt.Errorf("starting the supervisor of %s: %w", f.Name, err)
	}
	err := d.poll(ctx, supervisorWait, 100*time.Millisecond, func() (bool, error) {
		if failed := d.failure(f); failed != nil {
			return false, failed
		}
		st, err := d.status(ctx, f)
		return err == nil && st.Up(), nil
	})
	if errors.Is(err, errTimeout) {
		return fmt.Errorf("the supervisor of %s did not start the VM within %s%s",
			f.Name, supervisorWait, tail(f.Path(layout.SupervisorLog)))
	}
	return err
}

// waitReady waits until the guest runs the ready command over SSH. The
// connection it used is dropped: it was opened before cloud-init finished
// (group memberships are fixed at login), so later commands log in anew.
func (d *Driver) waitReady(ctx context.Context, f layout.Folder) error {
	defer d.Pool.Drop(f.Name)
	drivers.Progressf(ctx, "waiting for %s to boot (SSH, then cloud-init)", f.Name)
	var last error
	err := d.poll(ctx, d.opts.StartTimeout, time.Second, func() (bool, error) {
		if failed := d.failure(f); failed != nil {
			return false, failed
		}
		if st, err := d.status(ctx, f); err != nil || !st.Up() {
			return false, fmt.Errorf("%s stopped while booting%s", f.Name, tail(f.Path(layout.ConsoleFile)))
		}
		res, err := d.Pool.Exec(ctx, f.Name, drivers.ExecRequest{Command: d.opts.ready, Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			last = err
			d.Pool.Drop(f.Name)
			return false, nil
		}
		return true, nil
	})
	if errors.Is(err, errTimeout) {
		return fmt.Errorf("%s did not answer SSH with cloud-init done within %s (last: %v)%s",
			f.Name, d.opts.StartTimeout, last, tail(f.Path(layout.ConsoleFile)))
	}
	return err
}

// failure is what the supervisor wrote down when it ended on an error.
func (d *Driver) failure(f layout.Folder) error {
	b, err := os.ReadFile(f.Path(layout.FailureFile))
	if err != nil {
		return nil
	}
	return fmt.Errorf("the VM %s failed: %s%s", f.Name, strings.TrimSpace(string(b)), tail(f.Path(layout.ConsoleFile)))
}

// Stop shuts the guest down cleanly (ACPI), forcing it after StopTimeout,
// and waits for its supervisor to end. A stopped instance is left as is.
func (d *Driver) Stop(ctx context.Context, name string) error {
	return d.stop(ctx, d.folder(name), false)
}

func (d *Driver) stop(ctx context.Context, f layout.Folder, force bool) error {
	if !f.Exists() {
		return fmt.Errorf("vz instance %s: %w", f.Name, drivers.ErrNotFound)
	}
	d.Pool.Drop(f.Name)
	if _, err := d.status(ctx, f); err != nil {
		return nil // no supervisor: stopped (or crashed, which is stopped too)
	}
	sctx, cancel := context.WithTimeout(ctx, d.opts.StopTimeout+supervisor.ForcedStopWait+10*time.Second)
	defer cancel()
	st, err := supervisor.Stop(sctx, f.Socket(), force, d.opts.StopTimeout)
	if err != nil {
		return fmt.Errorf("stopping %s: %w", f.Name, err)
	}
	if st.Error != "" {
		return fmt.Errorf("stopping %s: %s", f.Name, st.Error)
	}
	// The supervisor answers, then closes its socket and exits.
	err = d.poll(ctx, 10*time.Second, 50*time.Millisecond, func() (bool, error) {
		_, err := d.status(ctx, f)
		return err != nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the supervisor of %s to end: %w", f.Name, err)
	}
	return nil
}

// Delete stops the instance by force, if it runs, and removes its folder.
func (d *Driver) Delete(ctx context.Context, name string) error {
	f := d.folder(name)
	if err := d.stop(ctx, f, true); err != nil {
		return err
	}
	if err := os.RemoveAll(f.Dir()); err != nil {
		return fmt.Errorf("deleting %s: %w", f.Dir(), err)
	}
	os.Remove(f.Socket()) // when it lives under <base>/run
	return nil
}

// Reconfigure applies a new CPU count, memory size or a larger disk to a
// stopped instance.
func (d *Driver) Reconfigure(ctx context.Context, s drivers.Spec) error {
	f := d.folder(s.Name)
	if err := d.bootable(f); err != nil {
		return err
	}
	if st, err := d.status(ctx, f); err == nil && st.Up() {
		return fmt.Errorf("vz instance %s is running: stop it before reconfiguring", s.Name)
	}
	if err := d.Validate(ctx, s); err != nil {
		return err
	}
	old, _ := f.ReadConfig()
	c, err := translate(s, old.CmdLine, old.HasInitrd)
	if err != nil {
		return fmt.Errorf("reconfiguring %s: %w", s.Name, err)
	}
	c.CmdLine, c.MAC, c.User = old.CmdLine, old.MAC, old.User
	if err := grow(f.Path(layout.DiskFile), diskBytes(s.DiskGiB)); err != nil {
		return fmt.Errorf("reconfiguring %s: %w", s.Name, err)
	}
	return f.WriteConfig(c)
}

// status asks the instance's supervisor; an error means there is none
// (never started, stopped, or crashed).
func (d *Driver) status(ctx context.Context, f layout.Folder) (supervisor.Status, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return supervisor.Query(sctx, f.Socket())
}

var errTimeout = errors.New("timed out")

// poll calls fn every interval until it is done, fails, ctx ends or
// timeout passes (errTimeout), all on the driver's clock.
func (d *Driver) poll(ctx context.Context, timeout, every time.Duration, fn func() (bool, error)) error {
	deadline := d.opts.Clock.NewTimer(timeout)
	defer deadline.Stop()
	for {
		done, err := fn()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C():
			return errTimeout
		case <-d.opts.Clock.After(every):
		}
	}
}

// tail is the end of a log, for an error message (empty when there is
// none).
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return fmt.Sprintf("; the last lines of %s:\n%s", path, strings.Join(lines[max(0, len(lines)-15):], "\n"))
}
