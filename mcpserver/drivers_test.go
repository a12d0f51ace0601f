package mcpserver

// The tests validate specs naming these backends, which register
// themselves when imported.
import (
	_ "github.com/sandboxforge/sbf/drivers/lima"
	_ "github.com/sandboxforge/sbf/drivers/sim"
)
