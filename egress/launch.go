package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/clock"
)

// LaunchConfig is what a driver writes for one VM before starting it, and
// sbf's QEMU wrapper hands to `sbf egress-qemu CONFIG QEMU ARGS…`: the
// policy, where the proxy keeps its socket and log, and the commands that
// run the proxy and the per-connection relay.
type LaunchConfig struct {
	Sandbox string   `json:"sandbox"`
	Egress  string   `json:"egress"`
	Allow   []string `json:"allow,omitempty"`
	// Dir holds the proxy's socket, address file, log and stderr.
	Dir string `json:"dir"`
	// Hosts, when set, is the proxy's whole DNS (StaticResolver): for
	// end-to-end tests and offline mirrors; the operator's to set.
	Hosts map[string][]string `json:"hosts,omitempty"`
	// ProxyCommand runs the proxy given its config file (sbf egress-proxy);
	// RelayCommand is the guestfwd command given the proxy's address (sbf
	// egress-relay). Both absolute.
	ProxyCommand []string `json:"proxy_command"`
	RelayCommand []string `json:"relay_command"`
	// GuestHostPorts are the operator's [policy] guest_host_ports: the host
	// ports the VM may reach whatever its mode (the host guard).
	GuestHostPorts []int `json:"guest_host_ports,omitempty"`
	// MaxRelays bounds the VM's relays running at once (RelaySlots); zero
	// is DefaultMaxRelays.
	MaxRelays int `json:"max_relays,omitempty"`
}

// Files in a LaunchConfig's Dir besides the log.
const (
	// RelaySlotsDir holds the relays' slot lock files.
	RelaySlotsDir = "relays"
	// GuardPIDFile is where the host guard's supervisor writes its PID.
	GuardPIDFile = "guard.pid"
	// GuardLogName is the host guard's refusals (the egress log's format).
	GuardLogName = "guard.log"
)

// LogName is the decision log in a LaunchConfig's Dir.
const LogName = "egress.log"

// WriteLaunchConfig stores a launch config (mode 0600) at path.
func WriteLaunchConfig(path string, c LaunchConfig) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the egress launch config: %w", err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// ReadLaunchConfig reads a launch config; unknown fields are errors.
func ReadLaunchConfig(path string) (LaunchConfig, error) {
	var c LaunchConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("reading the egress launch config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("reading the egress launch config %s: %w", path, err)
	}
	return c, nil
}

// IsQuery reports whether a QEMU command line only asks QEMU something
// (--version, -cpu help, -accel help, …), as Lima does before a boot: such
// a run starts no guest and is passed through unchanged.
func IsQuery(args []string) bool {
	for i, a := range args {
		switch a {
		case "--version", "-version", "--help", "-help", "-h":
			return true
		}
		if i > 0 && (a == "help" || a == "?") && strings.HasPrefix(args[i-1], "-") {
			return true
		}
	}
	return false
}

// LaunchDeps are Launch's collaborators; zero values are the real ones.
type LaunchDeps struct {
	Clock clock.Clock
	// PID is the process QEMU will be (the launcher execs it): the proxy
	// watches it and exits when it is gone.
	PID int
	// Start starts the proxy detached; nil runs cmd with Start.
	Start func(cmd *exec.Cmd) error
	// ReadyWait bounds the wait for the proxy to listen (10s).
	ReadyWait time.Duration
}

// Launched is what Launch made of QEMU's command line.
type Launched struct {
	Argv []string
	// ProxyAddr is where the VM's proxy listens, "" without one: the host
	// guard lets the relays reach it when it is a loopback TCP address.
	ProxyAddr string
}

// Launch turns the QEMU arguments Lima gives into the ones QEMU runs with:
// for an allowlist it first starts the VM's proxy (watching deps.PID) and
// waits until it listens, then restricts the user network with a guestfwd
// to the relay; deny restricts it with none; allow keeps the network as it
// is (the host guard still keeps the guest off the host) but, like the
// others, accepts one user network and no other. Queries pass through.
func Launch(c LaunchConfig, args []string, deps LaunchDeps) (Launched, error) {
	if IsQuery(args) {
		return Launched{Argv: args}, nil
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	mode, err := ParseMode(c.Egress)
	if err != nil {
		return Launched{}, err
	}
	var r Restriction
	var out Launched
	switch mode {
	case ModeAllow:
		if _, err := userNetdev(args); err != nil {
			return Launched{}, err
		}
		return Launched{Argv: args}, nil
	case ModeAllowlist:
		if out.ProxyAddr, err = startVMProxy(c, deps); err != nil {
			return Launched{}, err
		}
		r.Relay = append(slices.Clone(c.RelayCommand), relayFlags(c)...)
		r.Relay = append(r.Relay, out.ProxyAddr)
	}
	out.Argv, err = RestrictNetdev(args, r)
	return out, err
}

// relayFlags bound the VM's relays and let its host guard read theirs.
func relayFlags(c LaunchConfig) []string {
	max := c.MaxRelays
	if max <= 0 {
		max = DefaultMaxRelays
	}
	return []string{"--slots", filepath.Join(c.Dir, RelaySlotsDir), "--max", strconv.Itoa(max),
		"--guard-pid", filepath.Join(c.Dir, GuardPIDFile)}
}

// startVMProxy writes the proxy's config and starts it, returning the address
// it listens on. Each launch has its own socket (named after the QEMU PID):
// the proxy of the VM's previous boot removes its own when it goes.
func startVMProxy(c LaunchConfig, deps LaunchDeps) (string, error) {
	pid := strconv.Itoa(deps.PID)
	listen := "unix:" + filepath.Join(c.Dir, "proxy-"+pid+".sock")
	if len(listen) > 100 { // a unix socket path has ~104 bytes on every OS
		listen = "127.0.0.1:0"
	}
	pc := ProcessConfig{Sandbox: c.Sandbox, Egress: c.Egress, Allow: c.Allow, Listen: listen,
		AddrFile: filepath.Join(c.Dir, "proxy-"+pid+".addr"), LogPath: filepath.Join(c.Dir, LogName),
		WatchPID: deps.PID, Hosts: c.Hosts}
	data, _ := json.Marshal(pc)
	cfgPath := filepath.Join(c.Dir, "proxy.json")
	if err := atomicfile.WriteFile(cfgPath, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the egress proxy config: %w", err)
	}
	os.Remove(pc.AddrFile)
	stderr, err := os.OpenFile(filepath.Join(c.Dir, "proxy.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("starting the egress proxy: %w", err)
	}
	defer stderr.Close()
	cmd := exec.Command(c.ProxyCommand[0], append(c.ProxyCommand[1:], cfgPath)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	proc.Detach(cmd)
	start := deps.Start
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("starting the egress proxy %v: %w", c.ProxyCommand, err)
	}
	return waitReady(pc.AddrFile, deps)
}

// waitReady waits for the proxy to publish its address.
func waitReady(addrFile string, deps LaunchDeps) (string, error) {
	wait := deps.ReadyWait
	if wait == 0 {
		wait = 10 * time.Second
	}
	deadline := deps.Clock.Now().Add(wait)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b)), nil
		}
		if deps.Clock.Now().After(deadline) {
			return "", fmt.Errorf("the egress proxy did not listen within %s (see %s)", wait,
				filepath.Join(filepath.Dir(addrFile), "proxy.stderr"))
		}
		<-deps.Clock.After(20 * time.Millisecond)
	}
}
