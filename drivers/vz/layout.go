package vz

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// Files of an instance folder (<base>/<instance>/). config.json is written
// last by Create, so a folder without it is a create that never finished.
const (
	configFile     = "config.json"
	diskFile       = "disk.img"
	kernelFile     = "vmlinuz"
	initrdFile     = "initrd.img"
	seedFile       = "cidata.img"
	keyFile        = "id_ed25519"
	consoleFile    = "console.log"
	supervisorLog  = "supervisor.log"
	pidFile        = "supervisor.pid"
	lockFile       = "supervisor.lock"
	failureFile    = "supervisor.err"
	socketFile     = "control.sock"
	maxSocketBytes = 103 // sun_path is 104 bytes on macOS, 108 on Linux, NUL included
)

// Config is an instance as Create and Reconfigure leave it: what was
// asked for (reported back by List) and the machine it became.
type Config struct {
	Spec        drivers.Spec `json:"spec"`
	CPUs        uint         `json:"cpus"`
	MemoryBytes uint64       `json:"memory_bytes"`
	CmdLine     string       `json:"kernel_cmdline"`
	MAC         string       `json:"mac"`
	User        string       `json:"user"`
	HasInitrd   bool         `json:"has_initrd"`
}

// folder is one instance's folder.
type folder struct {
	base, name string
}

func (f folder) dir() string             { return filepath.Join(f.base, f.name) }
func (f folder) path(file string) string { return filepath.Join(f.base, f.name, file) }

// socket is the supervisor's control socket: in the folder when the path
// fits in a sockaddr, else under <base>/run/ by a hash of the name.
func (f folder) socket() string {
	if p := f.path(socketFile); len(p) <= maxSocketBytes {
		return p
	}
	sum := sha256.Sum256([]byte(f.name))
	return filepath.Join(f.base, "run", hex.EncodeToString(sum[:8])+".sock")
}

func (f folder) exists() bool {
	_, err := os.Stat(f.dir())
	return err == nil
}

func (f folder) readConfig() (Config, error) {
	b, err := os.ReadFile(f.path(configFile))
	if err != nil {
		return Config{}, fmt.Errorf("reading the configuration of %s: %w", f.name, err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("parsing %s: %w", f.path(configFile), err)
	}
	return c, nil
}

func (f folder) writeConfig(c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.path(configFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the configuration of %s: %w", f.name, err)
	}
	return nil
}

// missing names the first file a bootable instance needs that is absent.
func (f folder) missing(c Config) string {
	need := []string{diskFile, kernelFile, seedFile, keyFile}
	if c.HasInitrd {
		need = append(need, initrdFile)
	}
	for _, n := range need {
		if _, err := os.Stat(f.path(n)); errors.Is(err, fs.ErrNotExist) {
			return n
		}
	}
	return ""
}

// instanceNames lists the folders under base that hold sbf instances.
func instanceNames(base string) ([]string, error) {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing vz instances in %s: %w", base, err)
	}
	var out []string
	for _, e := range entries {
		if _, _, ok := drivers.ParseInstanceName(e.Name()); ok && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
