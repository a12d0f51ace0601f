package ownfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// WriteFile replaces the file with data so that a reader sees the old
// content or the new, never a mix, and a crash leaves no half-written
// file: a temporary file made beside it (exclusively: never through a
// link), synced, renamed over the name (a link there is replaced, its
// target never touched), then the folder synced. The folder must be there
// (Make makes it).
func (f Folder) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return f.write(name, data, perm, false, true)
}

// WriteVolatile replaces the file as WriteFile does (a reader sees the old
// content or the new), but syncs neither it nor the folder: for a file
// whose loss to a power cut costs nothing (the sim's world when a
// benchmark measures the engine, not the disk).
func (f Folder) WriteVolatile(name string, data []byte, perm fs.FileMode) error {
	return f.write(name, data, perm, false, false)
}

// WriteNew writes the file as WriteFile does unless anything is at the
// name already, a link included (fs.ErrExist): of two writers at once, one
// wins and the other reads its file.
func (f Folder) WriteNew(name string, data []byte, perm fs.FileMode) error {
	return f.write(name, data, perm, true, true)
}

func (f Folder) write(name string, data []byte, perm fs.FileMode, fresh, durable bool) error {
	r, err := f.root(false)
	if err != nil {
		return err
	}
	defer r.Close()
	shown := filepath.Join(f.Path(), name)
	tmp, err := writeTemp(r, name, data, perm, durable)
	if err != nil {
		return fmt.Errorf("writing %s: %w", shown, err)
	}
	if fresh {
		err = r.Link(tmp, name)
		r.Remove(tmp)
	} else if err = r.Rename(tmp, name); err != nil {
		r.Remove(tmp)
	}
	if err != nil {
		return fmt.Errorf("replacing %s: %w", shown, err)
	}
	if !durable {
		return nil
	}
	if err := syncDir(r); err != nil {
		return fmt.Errorf("syncing %s: %w", f.Path(), err)
	}
	return nil
}

// writeTemp writes data to a new file beside name and returns its name.
func writeTemp(r *os.Root, name string, data []byte, perm fs.FileMode, durable bool) (string, error) {
	var tmp string
	var fh *os.File
	for range 10 {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp = "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
		var err error
		if fh, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			break
		} else if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	if fh == nil {
		return "", fmt.Errorf("no free temporary name beside %s", name)
	}
	_, err := fh.Write(data)
	if err == nil && runtime.GOOS != "windows" {
		err = fh.Chmod(perm)
	}
	if err == nil && durable {
		err = fh.Sync()
		readcount.Synced()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(tmp)
		return "", err
	}
	return tmp, nil
}
