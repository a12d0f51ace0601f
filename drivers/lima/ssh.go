package lima

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// sshOptions reach an instance as its ssh.config says, and fall back to
// limactl when that fails.
func (d *Driver) sshOptions() sshexec.Options {
	return sshexec.Options{
		Target: d.sshTarget,
		Fallbacks: sshexec.Fallbacks{
			Exec: d.execLimactlShell,
			CopyIn: func(ctx context.Context, instance, localPath, remotePath string, sshErr error) error {
				return d.copyLimactl(ctx, localPath, instance+":"+remotePath, sshErr)
			},
		},
		Clock: d.opts.Clock,
	}
}

// dropConn closes an instance's SSH connection (it is stopping or going away).
func (d *Driver) dropConn(instance string) { d.Pool.Drop(instance) }

// sshTarget finds a running instance's ssh.config: at once when its host
// agent vouches for it (liveTarget), else through limactl. A
// booting one is not dialled: its sshd may not answer yet, and a user it
// answers for may not have the groups the boot gives (drivers.ErrBooting).
func (d *Driver) sshTarget(ctx context.Context, instance string) (sshexec.Target, error) {
	t, err := d.liveTarget(ctx, instance)
	if err == nil {
		return d.onMaster(instance, t), nil
	}
	l, inst, err := d.listOne(ctx, instance)
	switch {
	case err != nil:
		return sshexec.Target{}, fmt.Errorf("finding the ssh.config of %s: %w", instance, err)
	case inst.Status == drivers.Booting:
		return sshexec.Target{}, bootingError(instance, inst.BootStep)
	case l.Status != "Running":
		return sshexec.Target{}, fmt.Errorf("instance %s is %s, not running", instance, l.Status)
	case l.SSHConfigFile == "":
		return sshexec.Target{}, fmt.Errorf("finding the ssh.config of %s: limactl names none for it", instance)
	}
	data, err := os.ReadFile(l.SSHConfigFile)
	if err != nil {
		return sshexec.Target{}, fmt.Errorf("reading %s: %w", l.SSHConfigFile, err)
	}
	if t, err = parseSSHConfig(string(data)); err != nil {
		return sshexec.Target{}, fmt.Errorf("%s: %w", l.SSHConfigFile, err)
	}
	return d.onMaster(instance, t), nil
}

// onMaster is a target that keeps Lima's master while its sessions are
// still good for sbf.
func (d *Driver) onMaster(instance string, t sshexec.Target) sshexec.Target {
	if d.masterIsStale(instance) {
		t.ControlPath = "" // its sessions have the environment of before sbf's egress settings
	}
	return t
}

// bootingError says that an instance still boots, and what for.
func bootingError(instance, step string) error {
	if step == "" {
		return fmt.Errorf("%s: %w", instance, drivers.ErrBooting)
	}
	return fmt.Errorf("%s: %w (%s)", instance, drivers.ErrBooting, step)
}

// parseSSHConfig reads the Host block Lima writes to the instance's
// ssh.config (Hostname, Port, User, IdentityFile, ControlPath; values may
// be quoted).
func parseSSHConfig(data string) (sshexec.Target, error) {
	var t sshexec.Target
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		switch strings.ToLower(key) {
		case "hostname":
			t.Host = value
		case "port":
			t.Port = value
		case "user":
			t.User = value
		case "identityfile":
			t.IdentityFiles = append(t.IdentityFiles, value)
		case "controlpath": // the master Lima keeps (sshexec.Target)
			t.ControlPath = value
		}
	}
	if t.Host == "" || t.Port == "" || t.User == "" || len(t.IdentityFiles) == 0 {
		return t, fmt.Errorf("ssh.config lacks Hostname, Port, User or IdentityFile")
	}
	return t, nil
}
