// Package hyperv will drive Hyper-V through PowerShell on Windows. It is
// not written yet: selecting it reports BACKEND_UNAVAILABLE, so committed
// specs that name it stay valid on every host.
package hyperv

import (
	"context"

	"github.com/sandboxforge/sbf/drivers"
)

// Name is the driver name in specs.
const Name = "hyperv"

func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		New: func(context.Context, drivers.Env) (drivers.Driver, error) {
			return nil, &drivers.UnavailableError{Driver: Name, Reason: "the hyperv driver is not implemented yet",
				ProbableCause: "backend_unavailable", NextSteps: []string{"run sbf on Linux or macOS with the lima driver"}}
		},
	})
}
