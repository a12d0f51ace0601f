package spec

import (
	"strings"

	"github.com/sandboxforge/sbf/internal/names"
)

// ParseSnapshotRef splits a from_snapshot value, SANDBOX/NAME or NAME
// (sandbox "": whichever sandbox has a snapshot of that name).
func ParseSnapshotRef(ref string) (sandbox, name string, ok bool) {
	sandbox, name, found := strings.Cut(ref, "/")
	if !found {
		sandbox, name = "", ref
	} else if !ValidSandboxName(sandbox) {
		return "", "", false
	}
	if !names.Snapshot(name) { // drivers.ValidSnapshotName's rule: never a path nor an option
		return "", "", false
	}
	return sandbox, name, true
}
