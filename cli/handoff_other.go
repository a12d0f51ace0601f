//go:build !linux

package cli

import "os/exec"

// endWithParent: only Linux has a parent-death signal; elsewhere sbf
// passes on the signals it gets (forwardSignals) and SIGKILL is not one.
func endWithParent(*exec.Cmd) {}
