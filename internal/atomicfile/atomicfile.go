// Package atomicfile replaces files so a reader sees the old content or
// the new, never a mix, and a crash never leaves a half-written file.
package atomicfile

import (
	"os"

	"github.com/sandboxforge/sbf/internal/ownfile"
)

// WriteFile writes data to a temporary file in path's folder, syncs it,
// renames it over path, then syncs the folder so the rename is durable.
// The folder is used as named; a link at path is replaced, never followed
// (ownfile's writer: the one sbf has).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f := ownfile.PathFile(path)
	return f.Dir.WriteFile(f.Name, data, perm)
}
