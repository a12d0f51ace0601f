package sandbox

import "github.com/sandboxforge/sbf/reconcile/plan"

// Converged is what converging one sandbox as `sbf apply --target NAME`
// does did, and what it left: the engine's answer to a data-plane call
// that changes desired state (docker_compose up of the sandbox's stack).
type Converged struct {
	Plan          *plan.Plan
	ConnectionEnv map[string]string // the services' variables, secrets redacted
	Network       string            // the services' network, "" without services
}
