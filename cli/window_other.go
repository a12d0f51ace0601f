//go:build !unix

package cli

import (
	"os"

	"github.com/sandboxforge/sbf/drivers"
)

// watchWindow has no window-change signal to watch here; the size the
// terminal had at the start stays.
func watchWindow(*os.File) (<-chan drivers.WindowSize, func()) { return nil, func() {} }
