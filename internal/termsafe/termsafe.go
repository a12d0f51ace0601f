// Package termsafe renders strings that came from an MCP client or a guest
// (a command, a file name, an error a guest caused, an egress host) so that
// printing them on the operator's terminal shows them and does nothing
// else: no escape sequence moves the cursor, erases a line or sets the
// title, no carriage return overwrites what was printed, no bidi control
// reorders it. Such characters are written as Go escapes (\x1b, \r,
// \u202e); invalid UTF-8 bytes as \xNN. Everything else, backslashes
// included, is printed as it is: the result is for reading, not parsing
// (--json output is exact).
//
// It is not for a guest's own output (sbf exec, sbf shell, sbf cat, sbf
// task logs): those pass it through, as ssh and cat do.
package termsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line renders s for a field that must stay one line: a table cell, a name
// in a message. Newlines and tabs are escaped too.
func Line(s string) string { return render(s, false) }

// Text renders s for text the terminal may lay out over several lines (an
// error message, a note): newlines and tabs stay, which only move the
// cursor down or right, over nothing printed yet.
func Text(s string) string { return render(s, true) }

func render(s string, layout bool) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case layout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case Unsafe(r):
			b.WriteString(escape(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plain is the common case: printable ASCII only, nothing to do.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// Unsafe reports whether r may not reach a terminal as it is: a control
// character (C0, DEL, C1), a format character (bidi controls among them)
// other than the joiners scripts and emoji need, or a line or paragraph
// separator.
func Unsafe(r rune) bool {
	switch {
	case unicode.Is(unicode.Cc, r):
		return true
	case r == 0x200c || r == 0x200d: // zero-width (non-)joiner: Persian, Indic scripts, emoji sequences
		return false
	case unicode.Is(unicode.Cf, r), r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

func escape(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x80 {
		return `\x` + hex2(byte(r))
	}
	if r <= 0xffff {
		return `\u` + pad(strconv.FormatInt(int64(r), 16), 4)
	}
	return `\U` + pad(strconv.FormatInt(int64(r), 16), 8)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

func pad(s string, n int) string { return strings.Repeat("0", max(0, n-len(s))) + s }
