package spec

import (
	"regexp"
	"strings"
)

// snapshotNameRE is drivers.ValidSnapshotName's rule, which the spec
// checks without linking a backend: 1 to 64 characters, never a path nor
// an option.
var snapshotNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseSnapshotRef splits a from_snapshot value, SANDBOX/NAME or NAME
// (sandbox "": whichever sandbox has a snapshot of that name).
func ParseSnapshotRef(ref string) (sandbox, name string, ok bool) {
	sandbox, name, found := strings.Cut(ref, "/")
	if !found {
		sandbox, name = "", ref
	} else if !ValidSandboxName(sandbox) {
		return "", "", false
	}
	if !snapshotNameRE.MatchString(name) || strings.Contains(name, "..") {
		return "", "", false
	}
	return sandbox, name, true
}
