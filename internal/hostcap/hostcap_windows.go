package hostcap

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

func memoryAvailableGiB() *float64 {
	var st memoryStatusEx
	st.length = uint32(unsafe.Sizeof(st))
	if r, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&st))); r == 0 {
		return nil
	}
	v := float64(st.availPhys) / gib
	return &v
}

func diskFreeGiB(path string) *float64 {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return nil
	}
	v := float64(free) / gib
	return &v
}
