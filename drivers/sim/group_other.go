//go:build !unix

package sim

import (
	"os/exec"

	"github.com/sandboxforge/sbf/drivers"
)

func setGroup(*exec.Cmd) {}

// signalGroup can only end the command where there are no POSIX signals.
func signalGroup(cmd *exec.Cmd, _ drivers.Signal) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

func exitStatus(err *exec.ExitError) int { return err.ExitCode() }
