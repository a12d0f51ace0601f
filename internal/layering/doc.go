// Package layering holds the test that pins sbf's package layering, so the
// next change cannot quietly undo it: doors (cmd/, mcpserver) → engine and
// data plane (reconcile, sandbox, v1import) → desired state and planner
// (spec, state, reconcile/plan, drivers/guest) → drivers → internal.
package layering
