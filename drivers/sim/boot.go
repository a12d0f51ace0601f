package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// A sim instance boots at once, unless SBF_SIM_BOOT holds it: then a
// start leaves it booting (running, its guest not ready: commands refused
// with drivers.ErrBooting, as a real VM's sshd does not answer yet) until
// FinishBoot ends the boot, as a guest finishing cloud-init would. A start
// waits for the boot; a start cut short leaves the instance booting, and a
// later start waits for that boot instead of starting anew. A clean stop
// waits for the boot too (a guest that has not booted cannot shut down
// cleanly); ForceStop and Delete do not.

// bootHeld is the BootStep a held boot reports.
const bootHeld = "held by SBF_SIM_BOOT until FinishBoot"

// parseBoot reads SBF_SIM_BOOT: TARGET=hold or TARGET=timeout,
// comma-separated; TARGET is an instance name, a sandbox name or *, as in
// SBF_SIM_FAULTS. timeout holds the boot too, and the start that began it
// fails at once, the VM left booting, as `limactl start` past its timeout
// (or a killed sbf) leaves one; a later start waits for that boot.
func parseBoot(s string) ([]fault, error) {
	var out []fault
	for _, rule := range splitList(s) {
		target, how, ok := strings.Cut(rule, "=")
		if !ok || target == "" || how != "hold" && how != "timeout" {
			return nil, fmt.Errorf("SBF_SIM_BOOT rule %q: want TARGET=hold or TARGET=timeout", rule)
		}
		out = append(out, fault{rule: rule, op: "boot-" + how, target: target})
	}
	return out, nil
}

// held says whether SBF_SIM_BOOT holds the instance's boot.
func (d *Driver) held(name string) bool {
	return d.bootRule(name, "hold") || d.bootRule(name, "timeout")
}

func (d *Driver) bootRule(name, how string) bool {
	for _, f := range d.boot {
		if f.matches("boot-"+how, name) {
			return true
		}
	}
	return false
}

// FinishBoot ends the boot of a booting instance: its guest is ready.
func (d *Driver) FinishBoot(name string) error {
	r, err := d.read(name)
	if err != nil {
		return err
	}
	if r.Status != drivers.Booting {
		return fmt.Errorf("sim instance %s is %s, not booting", name, r.Status)
	}
	r.Status = drivers.Running
	return d.write(r)
}

// waitBooted waits until the instance's boot is over. Another process
// ends it (FinishBoot), so the record is looked at in real time, whatever
// clock the world runs on.
func (d *Driver) waitBooted(ctx context.Context, name string) error {
	said := false
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, 250*time.Millisecond) {
		r, err := d.read(name)
		if err != nil {
			return err
		}
		switch r.Status {
		case drivers.Running:
			return nil
		case drivers.Booting:
		default:
			return fmt.Errorf("sim instance %s stopped while booting", name)
		}
		if !said {
			said = true
			drivers.Progressf(ctx, "sim: %s is still booting (%s)", name, bootHeld)
		}
		if err := clock.Sleep(ctx, clock.Real{}, wait); err != nil {
			return err
		}
	}
}
