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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
