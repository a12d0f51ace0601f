package spec

import (
	"github.com/sandboxforge/sbf/drivers"
	// The tests validate specs naming backends, which register themselves.
	_ "github.com/sandboxforge/sbf/drivers/all"
)

// linked are the backends the tests' specs may name: every one sbf has.
var linked Backends = drivers.Linked
