package vz

import (
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// CommandStarter starts `exe args... DIR` as a supervisor: in a session
// of its own (so it outlives sbf and its terminal), its output appended
// to the instance's supervisor.log. A long-lived caller (sbf mcp) reaps it
// when it ends.
func CommandStarter(exe string, args ...string) func(dir string) error {
	return func(dir string) error {
		log, err := os.OpenFile(filepath.Join(dir, layout.SupervisorLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening the supervisor's log: %w", err)
		}
		defer log.Close()
		cmd := exec.Command(exe, append(args[:len(args):len(args)], dir)...)
		cmd.Stdout, cmd.Stderr = log, log
		proc.Detach(cmd)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", exe, err)
		}
		go cmd.Wait()
		return nil
	}
}
