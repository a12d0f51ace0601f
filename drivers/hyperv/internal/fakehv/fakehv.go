// Package fakehv is a pretend Windows host for the hyperv driver's tests:
// the fake powershell (./powershell) runs each script it is given against
// a world kept in a folder, as Hyper-V's cmdlets would. It knows the
// driver's operations by the script's header and reads their parameters
// with psscript, so a script whose quoting is wrong fails here the way it
// would fail PowerShell. The world is a JSON file plus real files for the
// disks, so tests can seed it and look at it.
package fakehv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers/hyperv/internal/psscript"
	"github.com/sandboxforge/sbf/internal/clock"
)

// World is the pretend host.
type World struct {
	Probe Probe `json:"probe"`
	VMs   []*VM `json:"vms"`
	// IP is the address a running VM reports (default 127.0.0.1).
	IP string `json:"ip,omitempty"`
	// BootPolls is how many state queries a started VM answers without
	// an address, as a booting guest does.
	BootPolls int `json:"boot_polls,omitempty"`
}

// Probe is what the host says about itself.
type Probe struct {
	PSVersion   string   `json:"PSVersion"`
	PSEdition   string   `json:"PSEdition"`
	HyperV      bool     `json:"HyperV"`
	Elevated    bool     `json:"Elevated"`
	Switches    []string `json:"Switches"`
	SwitchError string   `json:"SwitchError"`
}

// VM is one Hyper-V VM.
type VM struct {
	Name        string   `json:"name"`
	State       string   `json:"state"` // Off, Running, Saved, Paused
	Notes       string   `json:"notes"`
	Generation  int      `json:"generation"`
	CPUs        int      `json:"cpus"`
	MemoryBytes int64    `json:"memory_bytes"`
	Switch      string   `json:"switch"`
	Disks       []string `json:"disks"`
	SecureBoot  string   `json:"secure_boot_template"`
	PollsLeft   int      `json:"polls_left"` // before it reports an address
}

// Healthy is a host sbf can use: Hyper-V, elevated, the Default Switch.
func Healthy() World {
	return World{Probe: Probe{PSVersion: "5.1.22621.4391", PSEdition: "Desktop", HyperV: true, Elevated: true,
		Switches: []string{"Default Switch"}}}
}

// Load reads the world in dir.
func Load(dir string) (World, error) {
	var w World
	data, err := os.ReadFile(filepath.Join(dir, "world.json"))
	if err != nil {
		return w, fmt.Errorf("reading the fake world: %w", err)
	}
	return w, json.Unmarshal(data, &w)
}

// Save writes the world into dir.
func Save(dir string, w World) error {
	data, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "world.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "world.json"))
}

// vhd is what a disk file holds in the fake world.
type vhd struct {
	Parent string `json:"parent,omitempty"`
	Size   int64  `json:"size"`
}

// WriteVHD makes a disk file of the given virtual size (a base image).
func WriteVHD(path string, size int64) error {
	data, _ := json.Marshal(vhd{Size: size})
	return os.WriteFile(path, data, 0o644)
}

// VHDSize reads a disk file's virtual size.
func VHDSize(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("Get-VHD: the file '%s' does not exist", path)
	}
	var v vhd
	if err := json.Unmarshal(data, &v); err != nil {
		return 0, fmt.Errorf("Get-VHD: '%s' is not a virtual disk", path)
	}
	return v.Size, nil
}

// Call is one invocation as the fake recorded it.
type Call struct {
	Args   []string       `json:"args"` // without the script
	Op     string         `json:"op"`
	Params map[string]any `json:"params"`
}

// Calls reads what the fake recorded in dir, oldest first.
func Calls(dir string) ([]Call, error) {
	data, err := os.ReadFile(filepath.Join(dir, "calls.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var calls []Call
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, err
}

// Main is the fake powershell: it checks how it was started, parses and
// records the script, then replies from OP.stdout, OP.stderr, OP.exit and
// OP.sleep files in dir when the test wrote any, else runs the script on
// the world. It returns the exit status.
func Main(args []string, dir string, stdout, stderr io.Writer) int {
	if len(args) != 4 || args[0] != "-NoProfile" || args[1] != "-NonInteractive" || args[2] != "-Command" {
		fmt.Fprintf(stderr, "fake powershell: want -NoProfile -NonInteractive -Command SCRIPT, got %q\n", args)
		return 64
	}
	text := args[3]
	if !strings.HasPrefix(strings.SplitN(text, "\n", 3)[1]+"\n", "$ErrorActionPreference = 'Stop'\n") {
		fmt.Fprintln(stderr, "fake powershell: the script does not start with $ErrorActionPreference = 'Stop'")
		return 65
	}
	s, err := psscript.Parse(text)
	if err != nil {
		fmt.Fprintf(stderr, "fake powershell: the script does not parse: %v\n", err)
		return 65
	}
	if err := record(dir, args[:3], s, text); err != nil {
		fmt.Fprintln(stderr, "fake powershell:", err)
		return 70
	}
	if code, ok := canned(dir, s.Op, stdout, stderr); ok {
		return code
	}
	return simulate(dir, s, stdout, stderr)
}

func record(dir string, args []string, s psscript.Script, text string) error {
	line, _ := json.Marshal(Call{Args: args, Op: s.Op, Params: s.Params})
	f, err := os.OpenFile(filepath.Join(dir, "calls.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, s.Op+".ps1"), []byte(text), 0o644)
}

// canned replies from the test's files for op, if there are any.
func canned(dir, op string, stdout, stderr io.Writer) (int, bool) {
	read := func(ext string) (string, bool) {
		data, err := os.ReadFile(filepath.Join(dir, op+"."+ext))
		return string(data), err == nil
	}
	sleep, hasSleep := read("sleep")
	out, hasOut := read("stdout")
	errText, hasErr := read("stderr")
	exit, hasExit := read("exit")
	if !hasSleep && !hasOut && !hasErr && !hasExit {
		return 0, false
	}
	if d, err := time.ParseDuration(strings.TrimSpace(sleep)); hasSleep && err == nil {
		<-clock.Real{}.After(d) // a slow PowerShell really is slow: the driver's timeout must end it
	}
	io.WriteString(stdout, out)
	io.WriteString(stderr, errText)
	code, _ := strconv.Atoi(strings.TrimSpace(exit))
	return code, true
}
