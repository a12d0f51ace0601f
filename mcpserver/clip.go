package mcpserver

import (
	"fmt"
	"unicode/utf8"
)

// maxEcho bounds how much of a caller's input any message repeats:
// a response must never grow with the request.
const maxEcho = 512

func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
