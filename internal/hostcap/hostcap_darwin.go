package hostcap

import "os/exec"

func memoryAvailableGiB() *float64 {
	out, err := exec.Command("vm_stat").Output()
	if err != nil {
		return nil
	}
	return parseVMStat(out)
}
