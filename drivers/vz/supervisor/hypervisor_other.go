//go:build !darwin || !cgo

package supervisor

import "runtime"

// hostHypervisor: without macOS and cgo there is no framework to call.
func hostHypervisor() (Hypervisor, string) {
	if runtime.GOOS == "darwin" {
		return nil, "this sbf was built without cgo (CGO_ENABLED=0); " +
			"the vz driver calls Virtualization.framework through cgo"
	}
	return nil, "the vz driver needs macOS (Apple Virtualization.framework); this host runs " + runtime.GOOS
}
