package mcpserver

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"unicode/utf8"
)

// responseBudget bounds what one tool result takes in its message: its
// JSON as structured content plus that JSON again, escaped, as the text
// block for clients that read only text. A result is sized by this
// rendered size, never by its raw bytes: a letter costs 2 bytes, a quote 6,
// a control byte 13 (\u0001 in the JSON, \\u0001 in its text), so a guest
// printing 8 MiB of control bytes on each stream leaves about 120 KiB of
// each in the answer, not 8 MiB escaped twice. 3 MiB is far more than a
// model reads, well under the official TypeScript SDK's 10 MiB message
// limit, and small enough that a call holds about 20 MiB at its peak
// (mcp-go copies a message three times as it sends it): see
// docs/performance.md.
const responseBudget = 3 << 20

// streamKeep is the most of one output stream a result can carry (every
// byte costs at least 2): the door asks a backend to keep no more, whatever
// the output ceiling allows, so a call holds O(budget) of output.
const streamKeep = responseBudget / 2

// text is a cuttable string of a result: its value, its cost and a way to
// replace it.
type text struct {
	value string
	cost  int
	set   func(string)
}

// fit cuts m's strings until its rendered size fits responseBudget and
// says whether it does.
func fit(m map[string]any) bool {
	total, _ := walkCost(m, nil)
	if total+textQuotes <= responseBudget {
		return true
	}
	m["response_truncated"], m["response_budget_bytes"] = true, responseBudget
	total, texts := walkCost(m, []text{})
	total += textQuotes
	cuttable := 0
	costs := make([]int, len(texts))
	for i, t := range texts {
		cuttable += t.cost
		costs[i] = t.cost
	}
	level := waterLevel(costs, responseBudget-(total-cuttable))
	for _, t := range texts {
		if t.cost > level {
			kept := headByCost(t.value, level)
			t.set(kept)
			total -= t.cost - stringCost(kept)
		}
	}
	return total <= responseBudget
}

// waterLevel is the largest cost each string may keep so that all of them
// together cost at most room: short strings keep all they have, long ones
// share the rest equally.
func waterLevel(costs []int, room int) int {
	slices.Sort(costs)
	for i, c := range costs {
		share := room / (len(costs) - i)
		if c > share {
			return max(share, 0)
		}
		room -= c
	}
	return math.MaxInt
}

// headByCost is the longest head of s, whole characters only, whose
// stringCost is at most budget.
func headByCost(s string, budget int) string {
	n := stringCost("")
	for i := 0; i < len(s); {
		c, size := charCost(s[i:])
		if n+c > budget {
			return s[:i]
		}
		n += c
		i += size
	}
	return s
}

// walkCost is what v takes in the message, appending to texts the strings
// it may cut (any in objects and arrays) when texts is not nil.
func walkCost(v any, texts []text) (int, []text) {
	const punct = 2 // one of {}[]:, costs 1 in each copy
	collect := texts != nil
	switch x := v.(type) {
	case string:
		return stringCost(x), texts
	case map[string]any:
		if x == nil {
			break
		}
		n := (2 + max(len(x)-1, 0)) * punct // braces and commas
		for k, val := range x {
			var c int
			if s, ok := val.(string); ok && collect {
				c = stringCost(s)
				texts = append(texts, text{s, c, func(cut string) { x[k] = cut }})
			} else {
				c, texts = walkCost(val, texts)
			}
			n += stringCost(k) + punct + c // the key, ':', the value
		}
		return n, texts
	case []any:
		if x == nil {
			break
		}
		n := (2 + max(len(x)-1, 0)) * punct
		for i, val := range x {
			var c int
			if s, ok := val.(string); ok && collect {
				c = stringCost(s)
				texts = append(texts, text{s, c, func(cut string) { x[i] = cut }})
			} else {
				c, texts = walkCost(val, texts)
			}
			n += c
		}
		return n, texts
	}
	raw, _ := json.Marshal(v)
	return fragmentCost(raw), texts
}

// fragmentCost is what rendered JSON takes in the message: itself, and
// itself escaped as a string (every quote and backslash doubled; JSON
// holds no other character its encoder escapes).
func fragmentCost(raw []byte) int {
	return 2*len(raw) + bytes.Count(raw, []byte{'"'}) + bytes.Count(raw, []byte{'\\'})
}

// textQuotes are the quotes around the text copy of a result.
const textQuotes = 2

// stringCost is what s takes in the message: encoding/json's escape of it,
// quotes included, plus that escape escaped again in the text copy.
func stringCost(s string) int {
	n := 2 + 4 // `""`, then `\"\"`
	for i := 0; i < len(s); {
		c, size := charCost(s[i:])
		n += c
		i += size
	}
	return n
}

// charCost is the cost of the character s starts with, and its size:
// encoding/json writes \", \\, \n, \r, \t, \b, \f in two bytes (four and
// three in the text), other control bytes, <, >, &, U+2028, U+2029 and each
// byte of invalid UTF-8 in six (\u00XX, seven in the text); the rest as it
// is.
func charCost(s string) (cost, size int) {
	if b := s[0]; b < utf8.RuneSelf {
		return asciiCost[b], 1
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
		return 6 + 7, size
	}
	return 2 * size, size
}

var asciiCost = func() (t [utf8.RuneSelf]int) {
	for b := range t {
		switch {
		case b == '"' || b == '\\':
			t[b] = 2 + 4
		case b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
			t[b] = 2 + 3
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6 + 7
		default:
			t[b] = 1 + 1
		}
	}
	return t
}()
