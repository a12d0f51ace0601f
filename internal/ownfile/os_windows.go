//go:build windows

package ownfile

import (
	"io/fs"
	"os"
	"syscall"
)

const nonBlock = 0 // no FIFOs in a Windows folder

// isLink is any reparse point: a symbolic link, and a junction (which
// Lstat reports as a folder).
func isLink(info fs.FileInfo) bool {
	if info.Mode()&fs.ModeSymlink != 0 {
		return true
	}
	attrs, ok := info.Sys().(*syscall.Win32FileAttributeData)
	return ok && attrs.FileAttributes&syscall.FILE_ATTRIBUTE_REPARSE_POINT != 0
}

// sameFile cannot compare what an os.Root described on Windows (its file
// ids are read by path): the look before the open is the check there.
func sameFile(looked, opened fs.FileInfo) bool { return true }

// syncDir: folders cannot be opened for sync on Windows; a rename is
// durable enough there.
func syncDir(*os.Root) error { return nil }
