package hostcap

import "os"

func memoryAvailableGiB() *float64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil
	}
	return parseMeminfo(data)
}
