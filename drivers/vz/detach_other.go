//go:build !unix

package vz

import "os/exec"

// detach: supervisors run on macOS only; elsewhere this only has to build.
func detach(*exec.Cmd) {}
