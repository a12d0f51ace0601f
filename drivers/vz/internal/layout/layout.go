// Package layout is a vz instance folder: the files the driver writes
// for an instance and its supervisor reads to boot it, and the
// configuration both agree on. It is the one contract between the two
// besides the supervisor's control socket.
package layout

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
	ConfigFile     = "config.json"
	DiskFile       = "disk.img"
	KernelFile     = "vmlinuz"
	InitrdFile     = "initrd.img"
	SeedFile       = "cidata.img"
	KeyFile        = "id_ed25519"
	ConsoleFile    = "console.log"
	SupervisorLog  = "supervisor.log"
	PIDFile        = "supervisor.pid"
	LockFile       = "supervisor.lock"
	FailureFile    = "supervisor.err"
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

// Folder is one instance's folder: Base holds every instance, Name is
// the instance's.
type Folder struct {
	Base, Name string
}

// At is the folder dir names (made absolute, as a supervisor started
// from anywhere receives it).
func At(dir string) (Folder, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Folder{}, fmt.Errorf("locating the instance folder %s: %w", dir, err)
	}
	return Folder{Base: filepath.Dir(dir), Name: filepath.Base(dir)}, nil
}

// Dir is the folder itself.
func (f Folder) Dir() string { return filepath.Join(f.Base, f.Name) }

// Path is one of the folder's files.
func (f Folder) Path(file string) string { return filepath.Join(f.Base, f.Name, file) }

// Socket is the supervisor's control socket: in the folder when the path
// fits in a sockaddr, else under <base>/run/ by a hash of the name.
func (f Folder) Socket() string {
	if p := f.Path(socketFile); len(p) <= maxSocketBytes {
		return p
	}
	sum := sha256.Sum256([]byte(f.Name))
	return filepath.Join(f.Base, "run", hex.EncodeToString(sum[:8])+".sock")
}

// Exists reports whether the folder is there at all.
func (f Folder) Exists() bool {
	_, err := os.Stat(f.Dir())
	return err == nil
}

// ReadConfig reads config.json.
func (f Folder) ReadConfig() (Config, error) {
	b, err := os.ReadFile(f.Path(ConfigFile))
	if err != nil {
		return Config{}, fmt.Errorf("reading the configuration of %s: %w", f.Name, err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("parsing %s: %w", f.Path(ConfigFile), err)
	}
	return c, nil
}

// WriteConfig replaces config.json atomically.
func (f Folder) WriteConfig(c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.Path(ConfigFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the configuration of %s: %w", f.Name, err)
	}
	return nil
}

// Missing names the first file a bootable instance needs that is absent.
func (f Folder) Missing(c Config) string {
	need := []string{DiskFile, KernelFile, SeedFile, KeyFile}
	if c.HasInitrd {
		need = append(need, InitrdFile)
	}
	for _, n := range need {
		if _, err := os.Stat(f.Path(n)); errors.Is(err, fs.ErrNotExist) {
			return n
		}
	}
	return ""
}

// InstanceNames lists the folders under base that hold sbf instances.
func InstanceNames(base string) ([]string, error) {
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
