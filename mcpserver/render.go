package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/coded"
)

// structuredResult answers with a result's JSON as structured content and,
// for clients that read only text, as its text: rendered once, fitted to
// responseBudget (budget.go), held once.
func structuredResult(out any) *mcp.CallToolResult {
	text, err := render(out)
	if err != nil {
		return errorResult(newToolError(coded.Unknown, "rendering the result: "+err.Error(), nil))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: text}},
		StructuredContent: renderedJSON(text),
	}
}

// renderedJSON is JSON already rendered, written out as it is; it shares
// its bytes with the text content, so a result is held once however many
// times it is sent.
type renderedJSON string

// MarshalJSON lends the string's bytes: encoding/json only reads what a
// Marshaler returns (it compacts it into its own buffer).
func (r renderedJSON) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("null"), nil
	}
	return unsafe.Slice(unsafe.StringData(string(r)), len(r)), nil
}

// render is a tool result's JSON, fitted to responseBudget: when the result
// would take more, its longest strings are cut to an equal share of what
// the rest leaves (heads kept) and it says so (response_truncated,
// response_budget_bytes). Its size is computed from the values, so a
// result of megabytes is never rendered to be measured, and it is rendered
// into a buffer of its size.
func render(out any) (string, error) {
	m, ok := out.(map[string]any)
	if !ok {
		m, ok = resultMap(out) // a typed result: its strings shared, not rendered
	}
	if !ok {
		raw, err := json.Marshal(out)
		if err != nil {
			return "", err
		}
		if fragmentCost(raw)+textQuotes <= responseBudget || json.Unmarshal(raw, &m) != nil || m == nil {
			return unsafe.String(unsafe.SliceData(raw), len(raw)), nil // fits, or is no object to cut: never copied
		}
	}
	if !fit(m) {
		// Long strings inside values fit does not walk (typed slices,
		// structs): made generic once, then cut.
		raw, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		var generic map[string]any
		if json.Unmarshal(raw, &generic) == nil && generic != nil {
			raw, m = nil, generic
			fit(m)
		}
	}
	cost, _ := walkCost(m, nil)
	var b strings.Builder
	b.Grow(cost / 2) // the text copy is never shorter than the JSON
	if err := appendValue(&b, m); err != nil {
		return "", err
	}
	return b.String(), nil
}

// appendValue writes v as encoding/json does (map keys sorted, HTML
// characters escaped), strings without an intermediate copy.
func appendValue(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case string:
		appendString(b, x)
		return nil
	case map[string]any:
		if x == nil {
			break
		}
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(b, k)
			b.WriteByte(':')
			if err := appendValue(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case []any:
		if x == nil {
			break
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendValue(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	raw, err := json.Marshal(v)
	b.Write(raw)
	return err
}

// shortEscapes are the characters encoding/json writes as a backslash and
// one letter.
var shortEscapes = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'}

const hexDigits = "0123456789abcdef"

// appendString writes s as encoding/json's string encoder does.
func appendString(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c, size := s[i], 1
		var r rune = utf8.RuneError
		if c < utf8.RuneSelf {
			if asciiCost[c] == 2 { // written as it is
				i++
				continue
			}
			r = rune(c)
		} else if r, size = utf8.DecodeRuneInString(s[i:]); r != '\u2028' && r != '\u2029' &&
			(r != utf8.RuneError || size != 1) {
			i += size
			continue
		}
		b.WriteString(s[start:i])
		if c < utf8.RuneSelf && shortEscapes[c] != 0 {
			b.WriteByte('\\')
			b.WriteByte(shortEscapes[c])
		} else {
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[r>>shift&0xF])
			}
		}
		i += size
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
