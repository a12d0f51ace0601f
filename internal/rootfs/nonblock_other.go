//go:build !unix

package rootfs

// nonBlocking is a Unix flag; elsewhere os.Root opens no FIFO that blocks.
const nonBlocking = 0
