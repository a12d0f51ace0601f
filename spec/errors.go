package spec

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Error is one problem in one layer, at the place that caused it.
type Error struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Sentence is the error as SandboxForge v1 worded it ("vm.cpus must be a
// positive integer"), which MCP clients of v1 expect in details.errors.
func (e Error) Sentence() string {
	if e.Key == "" {
		return e.Message
	}
	return e.Key + " " + e.Message
}

// Errors is every problem found, across all layers. It is what Load
// returns when the desired state is invalid.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// ErrInvalid matches (errors.Is) every Errors: the configuration itself
// is wrong, so retrying cannot help until someone edits a file.
var ErrInvalid = errors.New("invalid workspace configuration")

// Is makes errors.Is(err, ErrInvalid) hold for any Errors in err's chain.
func (es Errors) Is(target error) bool { return target == ErrInvalid }

// sortBySource orders errors by layer (in merge order), then position.
func (es Errors) sortBySource(sources []string) {
	rank := map[string]int{}
	for i, s := range sources {
		rank[s] = i
	}
	sort.SliceStable(es, func(i, j int) bool { return rank[es[i].File] < rank[es[j].File] })
	for start := 0; start < len(es); {
		end := start
		for end < len(es) && es[end].File == es[start].File {
			end++
		}
		es[start:end].sortWithin()
		start = end
	}
}

// sortWithin orders errors by position inside one file; layers keep their
// merge order because each file's errors are sorted separately.
func (es Errors) sortWithin() {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		if es[i].Column != es[j].Column {
			return es[i].Column < es[j].Column
		}
		return es[i].Key < es[j].Key
	})
}

// clip bounds how much of a value an error quotes: errors travel to
// terminals and MCP clients, and must not echo unbounded input.
func clip(s string) string { return coded.Clip(s) }

// Coded is the errors' WORKSPACE_CONFIG_INVALID form: every sentence,
// and every position for editors.
func (es Errors) Coded() *coded.Error {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Sentence()
	}
	return coded.New(coded.ConfigInvalid, map[string]any{"errors": msgs, "positions": es}, "%s", es.Error())
}
