//go:build unix

package lima

import (
	"io/fs"
	"syscall"
)

func groupOf(info fs.FileInfo) (uint32, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Gid, true
}
