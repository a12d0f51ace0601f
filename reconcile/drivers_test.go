package reconcile

// The tests validate specs naming backends, which register themselves.
import _ "github.com/sandboxforge/sbf/drivers/all"
