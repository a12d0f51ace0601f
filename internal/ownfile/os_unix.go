//go:build unix

package ownfile

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// nonBlock keeps an open from waiting on a FIFO swapped in after the look.
const nonBlock = syscall.O_NONBLOCK

func isLink(info fs.FileInfo) bool { return info.Mode()&fs.ModeSymlink != 0 }

// sameFile says whether the name looked at is the file opened.
func sameFile(looked, opened fs.FileInfo) bool { return os.SameFile(looked, opened) }

func syncDir(r *os.Root) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	readcount.Synced()
	return d.Sync()
}
