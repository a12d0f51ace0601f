package loop

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sandboxforge/sbf/spec"
)

// fingerprint identifies the content of every file a workspace's
// configuration is read from, global ones included, so fixing any of
// them wakes a parked entry. A file's name, size, modification time and
// a hash of what spec.Load would read go in; a file that cannot be read
// says why (so making it readable is a change too).
func fingerprint(ws spec.Options) string {
	var b strings.Builder
	for _, path := range spec.ConfigFiles(ws.Root, ws.ConfigHome) {
		info, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		fmt.Fprintf(&b, "%s:", path)
		if err == nil {
			fmt.Fprintf(&b, "%d:%d:", info.Size(), info.ModTime().UnixNano())
			err = hashFile(&b, path)
		}
		if err != nil {
			fmt.Fprintf(&b, "%v", err)
		}
		b.WriteString(";")
	}
	return "files:" + b.String()
}

// hashFile writes the hash of path's first bytes (as many as spec.Load
// reads, and one more) to b.
func hashFile(b *strings.Builder, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, int64(spec.DefaultLimits.MaxBytes)+1)); err != nil {
		return err
	}
	fmt.Fprintf(b, "%x", h.Sum(nil))
	return nil
}
