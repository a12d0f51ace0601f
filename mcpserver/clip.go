package mcpserver

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/coded"
)

// maxEcho bounds how much of a caller's input any message repeats:
// a response must never grow with the request.
const maxEcho = 512

func clip(s string) string { return coded.Clip(s) }

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Bounds of an error envelope: messages and details quote what the caller
// sent (paths, keys, values), so their size is bounded independently of
// the request's.
const (
	maxErrorString = 4 << 10
	maxErrorItems  = 50
)

// bounded returns the envelope with long strings cut and long lists
// shortened, everywhere in its details.
func bounded(e *coded.Error) *coded.Error {
	out := &coded.Error{Code: e.Code, Message: clipTo(e.Message, maxErrorString), Details: map[string]any{}}
	raw, err := json.Marshal(e.Details)
	if err != nil {
		return out
	}
	var details map[string]any
	if json.Unmarshal(raw, &details) == nil {
		out.Details = boundValue(details).(map[string]any)
	}
	return out
}

func boundValue(v any) any {
	switch x := v.(type) {
	case string:
		return clipTo(x, maxErrorString)
	case []any:
		if len(x) > maxErrorItems {
			x = append(x[:maxErrorItems:maxErrorItems], fmt.Sprintf("… and %d more", len(x)-maxErrorItems))
		}
		for i := range x {
			x[i] = boundValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[clipTo(k, maxEcho)] = boundValue(val)
		}
		return out
	}
	return v
}
