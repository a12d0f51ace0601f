package hostguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// Config is what the supervisor (`sbf egress-guard CONFIG`) reads: the
// rules, where to log refusals and, to check before the guarded program
// starts that it can read that program's memory, a probe: a word at
// ProbeAddr in process ProbePID that must read ProbeValue.
type Config struct {
	Sandbox string `json:"sandbox"`
	Rules   Rules  `json:"rules"`
	// ResolvConf is read for the nameservers DNS may reach; "" is ResolvConf.
	ResolvConf string `json:"resolv_conf,omitempty"`
	// LogPath receives one egress.Entry per refusal (rotated like egress.log).
	LogPath string `json:"log_path"`
	// PIDFile, when set, receives the supervisor's PID: a relay reads it to
	// let the supervisor read its memory where Yama allows only descendants.
	PIDFile string `json:"pid_file,omitempty"`
	// AgentPID is Lima's host agent, which started QEMU: the loopback ports
	// it listens on (its DNS server, the host ends of port forwards) stay
	// open. Zero: none.
	AgentPID   int    `json:"agent_pid,omitempty"`
	ProbePID   int    `json:"probe_pid"`
	ProbeAddr  uint64 `json:"probe_addr"`
	ProbeValue uint64 `json:"probe_value"`
}

// File descriptors the supervisor is started with.
const (
	fdListener = 3 // the seccomp listener
	fdStatus   = 4 // supervisor → launcher: "ok\n", or why not
	fdGo       = 5 // launcher → supervisor: closed once it may check the probe
)

func writeConfig(path string, c Config) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing the host guard's config: %w", err)
	}
	return nil
}

// ReadConfig reads a supervisor config; unknown fields are errors.
func ReadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("reading the host guard's config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("reading the host guard's config %s: %w", path, err)
	}
	return c, nil
}
