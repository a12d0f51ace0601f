// Package vz will drive Apple's Virtualization.framework directly on
// macOS. It is not written yet: selecting it reports BACKEND_UNAVAILABLE,
// so committed specs that name it stay valid on every host.
package vz

import (
	"context"

	"github.com/sandboxforge/sbf/drivers"
)

// Name is the driver name in specs.
const Name = "vz"

func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		New: func(context.Context, drivers.Env) (drivers.Driver, error) {
			return nil, &drivers.UnavailableError{Driver: Name, Reason: "the vz driver is not implemented yet",
				ProbableCause: "backend_unavailable", NextSteps: []string{`use the lima driver on macOS ([vm] driver = "lima", vm_type = "vz")`}}
		},
	})
}
