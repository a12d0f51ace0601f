//go:build !linux || !(amd64 || arm64)

package hostguard

import (
	"errors"
	"os"
	"runtime"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Launch is one guarded exec (Linux on amd64 and arm64 only).
type Launch struct {
	Path       string
	Argv       []string
	Env        []string
	Supervisor []string
	Config     Config
	ConfigPath string
	Stderr     *os.File
	Clock      clock.Clock
	ReadyWait  time.Duration
}

var errUnsupported = errors.New("the host guard (seccomp) runs on Linux amd64 and arm64 only, not " +
	runtime.GOOS + "/" + runtime.GOARCH)

// Exec is not available here: sbf starts QEMU itself only on Linux.
func Exec(Launch) error { return errUnsupported }

// Supervise is not available here.
func Supervise(Config, clock.Clock) error { return errUnsupported }
