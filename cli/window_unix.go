//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/sandboxforge/sbf/drivers"
)

// watchWindow reports the terminal's new size each time it changes.
func watchWindow(tty *os.File) (<-chan drivers.WindowSize, func()) {
	changed := make(chan os.Signal, 1)
	signal.Notify(changed, syscall.SIGWINCH)
	sizes := make(chan drivers.WindowSize, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-changed:
				if cols, rows, err := term.GetSize(int(tty.Fd())); err == nil {
					select {
					case sizes <- drivers.WindowSize{Rows: rows, Cols: cols}:
					default:
					}
				}
			case <-done:
				return
			}
		}
	}()
	return sizes, func() {
		signal.Stop(changed)
		close(done)
	}
}
