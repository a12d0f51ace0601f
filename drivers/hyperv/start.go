package hyperv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Start boots a VM and waits, up to the boot timeout, until Hyper-V
// reports an IPv4 address for it and its sshd accepts connections: what
// exec needs next.
func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	if _, err := d.owned(ctx, "start", s.Name); err != nil {
		return err
	}
	return d.waitReady(ctx, s.Name)
}

// vmState is what the ip script reports.
type vmState struct {
	State string  `json:"State"`
	IPv4  psArray `json:"IPv4"`
}

func (d *Driver) vmState(ctx context.Context, name string) (vmState, error) {
	out, err := d.owned(ctx, "ip", name)
	if err != nil {
		return vmState{}, err
	}
	var st vmState
	if err := json.Unmarshal(out, &st); err != nil {
		return vmState{}, fmt.Errorf("reading the state of Hyper-V VM %s: %w (output %.200q)", name, err, out)
	}
	return st, nil
}

// waitReady polls on the driver's clock; a VM that stops meanwhile fails
// at once rather than at the timeout.
func (d *Driver) waitReady(ctx context.Context, name string) error {
	deadline := d.opts.Clock.Now().Add(d.opts.BootTimeout)
	drivers.Progressf(ctx, "waiting for %s to report an IPv4 address on switch %q", name, d.opts.Switch)
	waitingFor := "an IPv4 address"
	for {
		st, err := d.vmState(ctx, name)
		if err != nil {
			return err
		}
		if status(st.State) != drivers.Running {
			return fmt.Errorf("Hyper-V VM %s stopped while booting (state %s)", name, st.State)
		}
		if ip := firstIPv4(st.IPv4); ip != "" {
			waitingFor = "sshd at " + net.JoinHostPort(ip, d.opts.SSHPort)
			if d.sshAnswers(ctx, ip) {
				return nil
			}
		}
		if !d.opts.Clock.Now().Before(deadline) {
			return d.bootTimeout(name, waitingFor)
		}
		if err := clock.Sleep(ctx, d.opts.Clock, d.opts.PollInterval); err != nil {
			return err
		}
	}
}

func (d *Driver) sshAnswers(ctx context.Context, ip string) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(dctx, "tcp", net.JoinHostPort(ip, d.opts.SSHPort))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (d *Driver) bootTimeout(name, waitingFor string) error {
	return fmt.Errorf("Hyper-V VM %s runs, but %s did not answer within %s (HYPERV_BOOT_TIMEOUT_SECONDS); "+
		"Hyper-V learns a guest's address from its integration services, so the image needs hv_kvp_daemon "+
		"(Ubuntu: linux-cloud-tools-virtual; Debian: hyperv-daemons), switch %q must hand out addresses "+
		"(the Default Switch does), and sshd must listen on port "+
		"%s", name, waitingFor, d.opts.BootTimeout, d.opts.Switch, d.opts.SSHPort)
}
