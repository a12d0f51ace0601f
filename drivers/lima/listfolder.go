package lima

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/docker/go-units"
	"gopkg.in/yaml.v3"

	"github.com/sandboxforge/sbf/drivers"
)

// maxLimaYAML bounds the read of an instance's lima.yaml (sbf writes a few
// KiB; Lima's own templates embedded whole stay far below this).
const maxLimaYAML = 1 << 20

// folderConfig is the part of an instance's lima.yaml `limactl list`
// reports. Pointers tell a field sbf wrote from one Lima would default.
type folderConfig struct {
	VMType string `yaml:"vmType"`
	Arch   string `yaml:"arch"`
	CPUs   *int   `yaml:"cpus"`
	Memory string `yaml:"memory"`
	Disk   string `yaml:"disk"`
	SSH    struct {
		LocalPort *int `yaml:"localPort"`
	} `yaml:"ssh"`
}

// readFolders reports the instances named (all of LIMA_HOME's when none
// is) that keep passes, as `limactl list --json` would, from their folders:
// limactl starts in 0.1–0.2 s on an emulating host, twice on a warm
// create's path. It follows Lima 1.2's store.Inspect where it is sure: a
// lima.yaml with every reported field written (no default.yaml or
// override.yaml merged in), and an instance Stopped (no pid file) or
// Running (its host agent and VM process live, the host agent naming its
// SSH port). Anything else is not sure, and limactl is asked, whose answer
// says what is wrong (and which cleans up stale pid files).
func (d *Driver) readFolders(
	ctx context.Context,
	keep func(name string, label *drivers.Label) bool,
	names []string,
) (listed []listedInstance, sure bool) {
	home := limaHome(d.opts.Getenv)
	if runtime.GOOS == "windows" || home == "" || mergesConfig(home) {
		return nil, false
	}
	if len(names) == 0 {
		entries, err := os.ReadDir(home)
		if err != nil {
			return nil, false
		}
		for _, e := range entries { // as Lima's store.Instances
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "_") {
				names = append(names, e.Name())
			}
		}
	}
	for _, name := range names {
		label, err := drivers.ReadLabelDir(d.instanceDir(name))
		if err != nil {
			return nil, false
		}
		if !keep(name, label) {
			continue
		}
		l, ok := d.readFolder(ctx, name)
		if !ok {
			return nil, false
		}
		listed = append(listed, l)
	}
	return listed, true
}

// mergesConfig is whether Lima would merge an operator's default.yaml or
// override.yaml into every instance's configuration.
func mergesConfig(home string) bool {
	for _, name := range []string{"default.yaml", "override.yaml"} {
		if _, err := os.Lstat(filepath.Join(home, "_config", name)); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// readFolder is one instance as store.Inspect reports it, when sure.
func (d *Driver) readFolder(ctx context.Context, name string) (listedInstance, bool) {
	dir := d.instanceDir(name)
	c, ok := readFolderConfig(filepath.Join(dir, "lima.yaml"))
	if !ok {
		return listedInstance{}, false
	}
	l := listedInstance{Name: name, Dir: dir, VMType: c.VMType, Arch: c.Arch, CPUs: *c.CPUs,
		SSHLocalPort: *c.SSH.LocalPort, SSHAddress: "127.0.0.1", SSHConfigFile: filepath.Join(dir, sshConfigFile)}
	var err error
	if l.Memory, err = units.RAMInBytes(c.Memory); err != nil {
		return listedInstance{}, false
	}
	if l.Disk, err = units.RAMInBytes(c.Disk); err != nil {
		return listedInstance{}, false
	}
	hostAgent, vm := pidFileState(filepath.Join(dir, "ha.pid")), pidFileState(filepath.Join(dir, c.VMType+".pid"))
	switch {
	case hostAgent == pidAbsent && vm == pidAbsent:
		l.Status = "Stopped"
	case hostAgent == pidLives && vm == pidLives:
		port, err := hostAgentSSHPort(ctx, filepath.Join(dir, hostAgentSock))
		if err != nil {
			return listedInstance{}, false
		}
		l.Status, l.SSHLocalPort = "Running", port
	default:
		return listedInstance{}, false
	}
	return l, true
}

// readFolderConfig reads the fields limactl reports from a lima.yaml, with
// Lima's defaults where they do not depend on the host's version: the
// VM type on Linux (QEMU, its only one) and the host's architecture.
func readFolderConfig(path string) (folderConfig, bool) {
	f, err := os.Open(path)
	if err != nil {
		return folderConfig{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLimaYAML+1))
	if err != nil || len(data) > maxLimaYAML {
		return folderConfig{}, false
	}
	var c folderConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return folderConfig{}, false
	}
	if c.VMType == "" && runtime.GOOS == "linux" {
		c.VMType = "qemu"
	}
	if c.Arch == "" {
		c.Arch = limaArch(runtime.GOARCH)
	}
	sure := (c.VMType == "qemu" || c.VMType == "vz") && c.Arch != "" &&
		c.CPUs != nil && *c.CPUs > 0 && c.SSH.LocalPort != nil
	return c, sure
}

// limaArch is Lima's name of a Go architecture it runs guests of by
// default ("" when sbf does not know it).
func limaArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return ""
}

type pidState int

const (
	pidAbsent pidState = iota
	pidLives
	pidUnsure // unreadable, not a number, or its process is gone (limactl removes such a file)
)

// pidFileState is what Lima's ReadPIDFile would make of a pid file:
// signal 0 reaches the process, or EPERM says it runs as another user.
func pidFileState(path string) pidState {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return pidAbsent
	}
	if err != nil {
		return pidUnsure
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return pidUnsure
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return pidUnsure
	}
	if err := p.Signal(syscall.Signal(0)); err == nil || errors.Is(err, os.ErrPermission) {
		return pidLives
	}
	return pidUnsure
}
