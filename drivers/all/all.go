// Package all links every backend into a binary: each registers itself
// (its register.go) when imported. A new backend is its package plus one
// line here.
package all

import (
	_ "github.com/sandboxforge/sbf/drivers/external"
	_ "github.com/sandboxforge/sbf/drivers/hyperv"
	_ "github.com/sandboxforge/sbf/drivers/lima"
	_ "github.com/sandboxforge/sbf/drivers/sim"
	_ "github.com/sandboxforge/sbf/drivers/vz"
)
