package cli

import (
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
	cols int
}

func newTable(w io.Writer, headers ...string) *table {
	t := &table{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), cols: len(headers)}
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

func (t *table) flush() { t.w.Flush() }
