//go:build unix

package reconcile

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID is a file's device and inode: a file renamed into place has a
// new one even when its size and time match the old.
func fileID(info fs.FileInfo) string {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d.%d", st.Dev, st.Ino)
	}
	return ""
}
