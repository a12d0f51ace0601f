package hostcap

import (
	"os/exec"

	"github.com/sandboxforge/sbf/internal/proc"
)

func memoryAvailableGiB() *float64 {
	cmd := exec.Command("vm_stat")
	proc.Group(cmd)
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	return parseVMStat(out)
}
