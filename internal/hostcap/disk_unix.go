//go:build unix

package hostcap

import "syscall"

func diskFreeGiB(path string) *float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil
	}
	v := float64(st.Bavail) * float64(st.Bsize) / gib
	return &v
}
