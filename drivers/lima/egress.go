package lima

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// EnforceEgress says whether this host can hold a Lima VM to a network
// policy: only where sbf starts QEMU itself (Linux, vmType qemu), so that
// its user network can be restricted before the guest boots.
func (d *Driver) EnforceEgress(ctx context.Context, s drivers.Spec) error {
	switch {
	case d.opts.HostOS != "linux":
		return fmt.Errorf("the lima driver enforces a network policy only on Linux hosts (QEMU), not on %s",
			d.opts.HostOS)
	case s.VMType != "qemu":
		return fmt.Errorf("the lima driver enforces a network policy only for vm_type = \"qemu\", not %q", s.VMType)
	case d.opts.StateDir == "":
		return errors.New("the lima driver needs sbf's state folder for the egress proxy")
	}
	_, err := d.self()
	return err
}

// self is the sbf binary the QEMU wrapper runs `egress-qemu` with.
func (d *Driver) self() (string, error) {
	if d.opts.Self != "" {
		return d.opts.Self, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding sbf's own binary for the egress proxy: %w", err)
	}
	return exe, nil
}

// egressDir holds one instance's egress launch config, proxy socket and
// decision log, outside Lima's folder so the log outlives a delete.
func (d *Driver) egressDir(instance string) string {
	return filepath.Join(d.opts.StateDir, "lima", "egress", instance)
}

// EgressLog is where the proxy of an instance logs its decisions.
func (d *Driver) EgressLog(instance string) string {
	return filepath.Join(d.egressDir(instance), egress.LogName)
}

// GuardLog is where the host guard of an instance's QEMU logs refusals.
func (d *Driver) GuardLog(instance string) string {
	return filepath.Join(d.egressDir(instance), egress.GuardLogName)
}

// egressEnv writes the instance's launch config and returns what tells
// sbf's QEMU wrapper to start QEMU through `sbf egress-qemu`: every QEMU VM
// on Linux runs under its host guard, and those with a policy behind it.
func (d *Driver) egressEnv(ctx context.Context, s drivers.Spec) ([]string, error) {
	if err := d.EnforceEgress(ctx, s); err != nil {
		return nil, err
	}
	self, _ := d.self()
	dir := d.egressDir(s.Name)
	_, sandbox, _ := drivers.ParseInstanceName(s.Name)
	c := egress.LaunchConfig{Sandbox: sandbox, Egress: string(egress.ModeAllow), Dir: dir,
		Hosts: staticHosts(d.opts.Getenv("SBF_EGRESS_HOSTS")), ProxyCommand: []string{self, "egress-proxy"},
		RelayCommand: []string{self, "egress-relay"}, GuestHostPorts: d.opts.GuestHostPorts}
	if s.Egress != nil {
		c.Egress, c.Allow = s.Egress.Mode, s.Egress.Allow
	}
	path := filepath.Join(dir, "launch.json")
	if err := egress.WriteLaunchConfig(path, c); err != nil {
		return nil, err
	}
	return []string{"SBF_EGRESS_CONFIG=" + path, "SBF_EGRESS_EXEC=" + self}, nil
}

// staticHosts reads SBF_EGRESS_HOSTS, "name=addr[,name=addr…]": when set,
// the proxy resolves only these names (end-to-end tests, offline mirrors).
// The operator's environment sets it; a guest never can.
func staticHosts(v string) map[string][]string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	out := map[string][]string{}
	for _, pair := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && name != "" && addr != "" {
			n := egress.NormalizeHost(name)
			out[n] = append(out[n], addr)
		}
	}
	return out
}

// guestEgressScript points the guest's tools at the egress proxy (or takes
// them off it): login shells and SSH sessions (/etc/environment, read by
// pam_env), apt and dockerd. It is convenience only; the policy is enforced
// outside the guest whatever the guest does with these files.
func guestEgressScript(e *drivers.Egress) string {
	const env, apt, docker = "/etc/environment", "/etc/apt/apt.conf.d/95sbf-egress",
		"/etc/systemd/system/docker.service.d/sbf-egress.conf"
	script := "set -e\nold=$(cat " + docker + " 2>/dev/null || true)\n" +
		"sed -i '/# sbf-egress$/d' " + env + " 2>/dev/null || true\nrm -f " + apt + " " + docker + "\n"
	if e != nil && e.Mode == "allowlist" {
		proxy := "http://" + egress.ProxyGuestAddr.String()
		noProxy := "localhost,127.0.0.1,::1"
		for _, kv := range []string{"http_proxy=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy,
			"HTTPS_PROXY=" + proxy, "no_proxy=" + noProxy, "NO_PROXY=" + noProxy} {
			script += "echo '" + kv + " # sbf-egress' >> " + env + "\n"
		}
		script += "mkdir -p /etc/apt/apt.conf.d && printf 'Acquire::http::Proxy \"%s\";\\nAcquire::https::Proxy " +
			"\"%s\";\\n' " + proxy + " " + proxy + " > " + apt + "\n"
		script += "mkdir -p " + filepath.Dir(docker) + " && printf '[Service]\\nEnvironment=HTTP_PROXY=%s " +
			"HTTPS_PROXY=%s NO_PROXY=" + noProxy + "\\n' " + proxy + " " + proxy + " > " + docker + "\n"
	}
	// Docker restarts only when its proxy changed: a VM started again with
	// the same policy (a fork's child above all, its containers running
	// from the source's memory) keeps its containers.
	return script + "[ \"$old\" = \"$(cat " + docker + " 2>/dev/null || true)\" ] && exit 0\n" +
		"if systemctl is-active --quiet docker 2>/dev/null; then systemctl daemon-reload && " +
		"systemctl restart docker; else systemctl daemon-reload 2>/dev/null || true; fi\n"
}

// configureGuestEgress runs guestEgressScript once the VM is up, for a VM
// with a policy or one that had one (a marker in its egress folder says
// so); others are left alone. A failure is reported, not fatal: the policy
// holds either way, only the guest's tools may not find the proxy.
func (d *Driver) configureGuestEgress(ctx context.Context, s drivers.Spec) {
	if !d.guestEgressWanted(s) {
		return
	}
	res, err := d.Exec(ctx, s.Name, drivers.ExecRequest{Command: "sudo -n sh -c " +
		shellquote.Quote(guestEgressScript(s.Egress))})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d%s", res.ExitCode, coded.Said(res.Stderr))
	}
	d.environmentChanged(s.Name)
	d.guestEgressDone(ctx, s, err)
}

// environmentChanged follows a script that may have rewritten the guest's
// /etc/environment: sshd reads it (pam_env) once per connection, so the
// next command must come over a new one, and not over the master Lima
// connected at the boot, before the script ran (sshTarget).
func (d *Driver) environmentChanged(instance string) {
	if limaHome(d.opts.Getenv) != "" {
		os.WriteFile(filepath.Join(d.instanceDir(instance), masterStale), nil, 0o600)
	}
	d.dropConn(instance)
}

// masterStale marks an instance whose /etc/environment sbf rewrote after
// Lima's OpenSSH master connected: sessions on the master would miss (or
// keep) the egress proxy's variables. The next start removes it.
const masterStale = "sbf-master-stale"

// masterIsStale says whether the instance's master may have another
// environment than its guest now gives a new connection (or where Lima
// keeps the instance is unknown).
func (d *Driver) masterIsStale(instance string) bool {
	if limaHome(d.opts.Getenv) == "" {
		return true
	}
	_, err := os.Lstat(filepath.Join(d.instanceDir(instance), masterStale))
	return err == nil
}

// guestEgressWanted says whether the guest's tools are to be pointed at
// the egress proxy, or taken off it (a marker says they were).
func (d *Driver) guestEgressWanted(s drivers.Spec) bool {
	_, err := os.Stat(d.guestEgressMarker(s.Name))
	return s.Egress != nil || err == nil
}

// guestEgressMarker says that an instance's guest was given egress
// settings: it holds the script that gave them, or egressUnknown.
func (d *Driver) guestEgressMarker(instance string) string {
	return filepath.Join(d.egressDir(instance), "guest-configured")
}

// egressUnknown marks a guest whose settings a failed script may have
// left half made.
const egressUnknown = "unknown: the last settings failed\n"

// guestEgressDone reports a failed guestEgressScript, or records that the
// guest now has the settings (or none).
func (d *Driver) guestEgressDone(ctx context.Context, s drivers.Spec, err error) {
	marker := d.guestEgressMarker(s.Name)
	switch {
	case err != nil:
		drivers.Progressf(ctx, "lima warning: could not point %s's tools at its egress proxy: %v", s.Name, err)
		os.WriteFile(marker, []byte(egressUnknown), 0o600)
	case s.Egress == nil:
		os.Remove(marker)
	default:
		os.WriteFile(marker, []byte(guestEgressScript(s.Egress)), 0o600)
	}
}
