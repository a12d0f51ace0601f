package supervisor

import "context"

// Hypervisor boots machines: Virtualization.framework on macOS
// (hypervisor_darwin.go), a fake in tests. It is the only part of vz
// that calls the framework.
type Hypervisor interface {
	// Boot creates and starts a machine; it returns once the framework
	// says it started (the guest is then booting).
	Boot(ctx context.Context, m MachineConfig) (Machine, error)
}

// Machine is a started VM. It lives as long as the process that booted
// it, which is why each one has a supervisor process of its own.
type Machine interface {
	// RequestStop presses the ACPI power button: the guest shuts down
	// cleanly if it listens.
	RequestStop() error
	// Stop ends the machine at once, as pulling the plug would.
	Stop() error
	// Done delivers one value when the machine has stopped: nil when the
	// guest powered off, else what went wrong.
	Done() <-chan error
}

// framework is the hypervisor of this build (nil where there is none);
// the reason says why not.
var framework, frameworkMissing = hostHypervisor()

// Unavailable says why this build cannot boot machines (no macOS, or no
// cgo), "" when it can.
func Unavailable() string {
	if framework != nil {
		return ""
	}
	return frameworkMissing
}
