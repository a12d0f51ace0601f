package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sandboxforge/sbf/internal/termsafe"
)

// writeJSON writes v as json.Encoder with a two-space indent does.
func writeJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rest, err := indentTo(w, make([]byte, 0, indentPiece), data)
	if err != nil {
		return err
	}
	_, err = w.Write(append(rest, '\n'))
	return err
}

// indentPiece is how much indented JSON indentTo holds before writing it:
// a 1,000-sandbox status is 350 KB compact and twice that indented.
const indentPiece = 64 << 10

// indentTo writes src, compact JSON as json.Marshal writes it, to w as
// json.Indent(dst, src, "", "  ") would, indentPiece at a time through buf,
// and returns what it has not written yet. json.Indent's validating scanner
// took longer to indent a status than json.Marshal to write it
// (json.Marshal's output is valid: nothing to check).
func indentTo(w io.Writer, buf, src []byte) ([]byte, error) {
	dst := buf
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		afterOpen := i > 0 && (src[i-1] == '{' || src[i-1] == '[') // strings are skipped whole
		if afterOpen {
			if depth++; c != '}' && c != ']' { // {} and [] stay so
				newline()
			}
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			dst, i = append(dst, src[i:end]...), end-1
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		case '}', ']':
			if depth--; !afterOpen {
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
		if len(dst) >= indentPiece {
			if _, err := w.Write(dst); err != nil {
				return nil, err
			}
			dst = dst[:0]
		}
	}
	return dst, nil
}

// stringEnd is the index just past the JSON string that starts at src[i].
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

// table aligns columns for human output.
type table struct {
	w    *tabwriter.Writer
	out  io.Writer
	buf  bytes.Buffer
	cols int
}

func newTable(w io.Writer, headers ...string) *table {
	t := &table{out: w, cols: len(headers)}
	t.w = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	t.row(headers...)
	return t
}

// row prints one line of cells. A cell may hold what a client or a guest
// wrote (a command, a file name, an error): each is rendered one line and
// terminal-safe, so it neither breaks the table nor drives the terminal.
func (t *table) row(cells ...string) {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = termsafe.Line(c)
	}
	fmt.Fprintln(t.w, strings.Join(safe, "\t"))
}

// flush writes the table without the spaces tabwriter pads an empty last
// cell with: they show in a diff, a copy and paste, and trip grep ' $'.
func (t *table) flush() {
	t.w.Flush()
	lines := strings.SplitAfter(t.buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimSuffix(l, "\n"), " ")
		if strings.HasSuffix(l, "\n") {
			lines[i] += "\n"
		}
	}
	io.WriteString(t.out, strings.Join(lines, ""))
	t.buf.Reset()
}
