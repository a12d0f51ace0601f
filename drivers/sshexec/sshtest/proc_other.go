//go:build !unix

package sshtest

import (
	"os"
	"os/exec"
)

// Without process groups only the shell itself can be killed; the tests
// that need more run on unix hosts.
func ownGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func signalName(*os.ProcessState) string { return "" }
