//go:build darwin

package vz

import "golang.org/x/sys/unix"

// clone makes dst a copy-on-write clone of src (APFS clonefile); it fails
// across volumes and on other filesystems, and the caller copies instead.
func clone(src, dst string) error { return unix.Clonefile(src, dst, unix.CLONE_NOFOLLOW) }
