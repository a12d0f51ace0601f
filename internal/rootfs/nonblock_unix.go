//go:build unix

package rootfs

import "syscall"

// nonBlocking opens a FIFO without waiting for a writer; it changes
// nothing for regular files and folders.
const nonBlocking = syscall.O_NONBLOCK
