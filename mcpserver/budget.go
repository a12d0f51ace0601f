package mcpserver

import (
	"encoding/json"
	"unicode/utf8"
)

// responseBudget bounds a tool result's JSON. A result goes out twice (as
// structured content, and as its JSON in a text block for clients that
// read only text), and the official TypeScript SDK's stdio client refuses
// a message over 10 MiB by default: at 4 MiB the message stays under that
// even when escaping grows it. The output ceiling (max_output_bytes, 8 MiB
// per stream) bounds what the server holds; this bounds what one message
// carries.
const responseBudget = 4 << 20

// fitResponse shortens the longest strings of a result (the head kept)
// until its JSON fits responseBudget, and says so in the result.
func fitResponse(out any) any {
	raw, err := json.Marshal(out)
	if err != nil || len(raw) <= responseBudget {
		return out
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return out
	}
	size := len(raw)
	for range 16 {
		field, s := longestString(m)
		if field == nil {
			break
		}
		keep := max(0, len(s)-(size-responseBudget)-1024)
		field(cutUTF8(s, keep))
		m["response_truncated"], m["response_budget_bytes"] = true, responseBudget
		if raw, err = json.Marshal(m); err != nil {
			return out
		}
		if size = len(raw); size <= responseBudget {
			break
		}
	}
	return m
}

// longestString finds the longest string in a result, at the top or one
// object below (run_command's stdout, a task's logs), and a way to set it.
func longestString(m map[string]any) (func(string), string) {
	var set func(string)
	var longest string
	consider := func(obj map[string]any, key string, v any) {
		if s, ok := v.(string); ok && len(s) > len(longest) {
			longest, set = s, func(n string) { obj[key] = n }
		}
	}
	for k, v := range m {
		consider(m, k, v)
		if inner, ok := v.(map[string]any); ok {
			for ik, iv := range inner {
				consider(inner, ik, iv)
			}
		}
	}
	if len(longest) == 0 {
		return nil, ""
	}
	return set, longest
}

// cutUTF8 keeps at most n bytes of s, never half a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
