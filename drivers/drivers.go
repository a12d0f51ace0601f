// Package drivers holds what the engine and every backend share: the
// description of a VM to create, what a backend reports about one, the
// derived instance names that mark what sbf owns, and the errors backends
// return. The interfaces themselves are declared by their consumers
// (reconcile, guest).
package drivers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Spec is the VM a sandbox wants.
type Spec struct {
	Name      string   `json:"name"`
	CPUs      int      `json:"cpus"`
	MemoryGiB float64  `json:"memory_gib"`
	DiskGiB   float64  `json:"disk_gib"`
	Arch      string   `json:"arch,omitempty"`
	VMType    string   `json:"vm_type,omitempty"`
	Template  string   `json:"template,omitempty"`
	Mounts    []string `json:"mounts,omitempty"`
	Ports     []string `json:"ports,omitempty"`
}

// Equal reports whether two specs describe the same VM.
func (s Spec) Equal(o Spec) bool {
	return s.Name == o.Name && s.CPUs == o.CPUs && s.MemoryGiB == o.MemoryGiB && s.DiskGiB == o.DiskGiB &&
		s.Arch == o.Arch && s.VMType == o.VMType && s.Template == o.Template &&
		slices.Equal(s.Mounts, o.Mounts) && slices.Equal(s.Ports, o.Ports)
}

// Status is a backend's view of an instance.
type Status string

const (
	Running Status = "running"
	Stopped Status = "stopped"
	// Broken instances exist but cannot be started as they are (a create
	// interrupted halfway, a missing disk); the planner replaces them.
	Broken Status = "broken"
)

// Instance is what a backend lists about one VM it runs.
type Instance struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	Status Status `json:"status"`
	// Reported holds what the backend says the VM has; zero fields are
	// ones this backend does not report.
	Reported Spec   `json:"reported"`
	SSH      string `json:"ssh,omitempty"` // host:port when known
}

// ErrNotFound is returned for operations on an instance that does not
// exist. Deleting a missing instance is not an error for the engine.
var ErrNotFound = errors.New("instance not found")

// UnavailableError says a backend cannot be used on this host, why, and
// what to do about it (BACKEND_UNAVAILABLE).
type UnavailableError struct {
	Driver        string
	Reason        string
	ProbableCause string   // v1 vocabulary: backend_binary_missing, unsupported_host_os, …
	NextSteps     []string // what the user can do, in order
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("%s driver unavailable: %s", e.Driver, e.Reason)
	if len(e.NextSteps) > 0 {
		msg += " (next: " + strings.Join(e.NextSteps, "; ") + ")"
	}
	return msg
}

// Prefix starts every instance name sbf creates; nothing else is touched.
const Prefix = "sbf-"

// InstanceName derives a sandbox's backend name: sbf-<first 8 hex of the
// workspace id>-<sandbox>. Being derived, it lets a lost state file be
// rebuilt from what the backends list.
func InstanceName(workspaceID, sandbox string) string {
	return Prefix + WorkspaceTag(workspaceID) + "-" + sandbox
}

// WorkspaceTag is the part of instance names that names the workspace.
func WorkspaceTag(workspaceID string) string {
	hex := strings.TrimPrefix(workspaceID, "ws_")
	if len(hex) > 8 {
		hex = hex[:8]
	}
	return hex
}

// ParseInstanceName splits a name made by InstanceName. ok is false for
// anything sbf did not create.
func ParseInstanceName(name string) (tag, sandbox string, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found || len(rest) < 10 || rest[8] != '-' {
		return "", "", false
	}
	for _, c := range rest[:8] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", "", false
		}
	}
	return rest[:8], rest[9:], true
}
