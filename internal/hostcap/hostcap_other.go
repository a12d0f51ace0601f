//go:build !linux && !darwin && !windows

package hostcap

func memoryAvailableGiB() *float64 { return nil }
