package hostpath

import (
	"fmt"

	"github.com/sandboxforge/sbf/internal/coded"
)

// CopyLimit is the code of a copy from a sandbox that would write more
// than the operator's ceiling allows.
const CopyLimit = "COPY_LIMIT_EXCEEDED"

// DefaultMaxCopyBytes is the ceiling when the operator sets none: 1 GiB,
// far above a project's sources and build output, far below a guest's
// 20 GiB disk that a loop could fill onto the host.
const DefaultMaxCopyBytes int64 = 1 << 30

// maxCopy is the ceiling a policy sets.
func maxCopy(n int64) int64 {
	if n <= 0 {
		return DefaultMaxCopyBytes
	}
	return n
}

// tooLarge is the refusal of the entry that would pass the ceiling; what
// was written before it stays, and the details say what that is.
func tooLarge(ceiling int64, at string, w written) error {
	return coded.New(CopyLimit, map[string]any{"max_copy_bytes": ceiling, "stopped_at": clipName(at),
		"written_entries": w.entries, "written_bytes": w.bytes, "written_first": nonNilStrings(w.first)},
		"the copy stopped before %s: it would write more than %s, the ceiling on what a copy from a sandbox "+
			"writes on this host (%d entries, %d bytes of content were written before it and are kept)",
		clipName(at), bytesText(ceiling), w.entries, w.bytes)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// bytesText says a size as a person reads it.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
