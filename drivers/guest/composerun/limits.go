package composerun

import (
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/confine"
)

// What one compose load may take. The files are checked before compose-go
// reads any of them (the child's check); the child bounds its own CPU time
// and address space before it reads anything (confine.Bound, Linux); the
// parent kills it at the wall clock deadline. A compose stack's files are
// kilobytes and load in milliseconds: these bounds are far above that and
// far below what a workspace written to exhaust the host would take, at
// every plan and every pass of the loop.
const (
	MaxFileBytes  = 4 << 20  // one compose, included, extended or env file
	MaxLoadBytes  = 16 << 20 // all the files of one load
	limitSettings = "sbf's bounds on a compose load"
)

var (
	// ChildLimits are the bounds the child sets on itself: CPU time, and
	// address space beyond what it maps at its start.
	ChildLimits = confine.Limits{CPU: 10 * time.Second, AddressSpace: 512 << 20}
	// WallLimit is how long the parent lets a child load.
	WallLimit = 30 * time.Second
)

// limitError is a compose load refused at one of its bounds: a coded
// COMPOSE_LIMIT_EXCEEDED naming the bound.
func limitError(limit string, value any, details map[string]any, format string, args ...any) *coded.Error {
	details["limit"], details["limit_value"] = limit, value
	return coded.New(coded.ComposeLimit, details, "%s (%s: %s %v); make the compose files smaller or simpler",
		fmt.Sprintf(format, args...), limitSettings, limit, value)
}

// FileTooLarge is a file the load would read that is larger than
// MaxFileBytes.
func FileTooLarge(file string, size int64) *coded.Error {
	return limitError("file_bytes", MaxFileBytes, map[string]any{"file": file, "bytes": size},
		"%s is %d bytes, more than a compose load reads of one file", file, size)
}

// LoadTooLarge is a load whose files, with file, come to more than
// MaxLoadBytes.
func LoadTooLarge(file string, total int64) *coded.Error {
	return limitError("load_bytes", MaxLoadBytes, map[string]any{"file": file, "bytes": total},
		"with %s the compose files come to %d bytes, more than one compose load reads", file, total)
}

func cpuExceeded(sandbox string, used time.Duration) *coded.Error {
	details := map[string]any{"sandbox": sandbox, "cpu_seconds": used.Seconds()}
	return limitError("cpu", ChildLimits.CPU.String(), details,
		"loading the compose files of sandbox %s used up its CPU time and was stopped", sandbox)
}

func memoryExceeded(sandbox string) *coded.Error {
	mib := fmt.Sprintf("%d MiB", ChildLimits.AddressSpace>>20)
	return limitError("address_space", mib, map[string]any{"sandbox": sandbox},
		"loading the compose files of sandbox %s ran out of the memory it may use and was stopped", sandbox)
}

func wallExceeded(sandbox string) *coded.Error {
	return limitError("wall_clock", WallLimit.String(), map[string]any{"sandbox": sandbox},
		"loading the compose files of sandbox %s took too long and was stopped", sandbox)
}
