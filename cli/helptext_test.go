package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every visible command's help has examples, and no flag shows a Go type
// (stringArray, string, int) where a word a person reads belongs.
func TestHelpHasExamplesAndValueWords(t *testing.T) {
	goType := regexp.MustCompile(`--[a-z0-9-]+ (string|stringArray|stringSlice|int|int64|duration|uint|float64)\b`)
	root := (&app{getenv: func(string) string { return "" }}).rootCommand()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		path := c.CommandPath()
		r := sbf(t, nil, append(strings.Fields(path)[1:], "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "\nExamples:\n  sbf") {
			t.Errorf("%s --help: exit %d, no Examples:\n%s", path, r.code, r.stdout)
		}
		if m := goType.FindString(r.stdout); m != "" {
			t.Errorf("%s --help shows a Go type: %q", path, m)
		}
		if strings.Contains(r.stdout, "`") {
			t.Errorf("%s --help shows a backquote", path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// Completion descriptions are plain text: the backquotes that name a
// flag's value stay out of them.
func TestCompletionDescriptionsHaveNoBackquotes(t *testing.T) {
	for _, args := range [][]string{{"__complete", "apply", "--"}, {"__complete", "mcp", "--"},
		{"__complete", "cp", "--"}, {"__complete", "plan", "--"}} {
		r := sbf(t, nil, args...)
		if r.code != 0 || strings.Contains(r.stdout, "`") || !strings.Contains(r.stdout, "--") {
			t.Errorf("sbf %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stdout)
		}
	}
}

// sbf docs man writes a page per command, each a well-formed roff page
// with the command's examples.
func TestDocsManWritesPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	r := sbf(t, nil, "docs", "man", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, name := range []string{"sbf.1", "sbf-apply.1", "sbf-snapshot-create.1", "sbf-docs-man.1"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		page := string(b)
		if err != nil || !strings.HasPrefix(page, ".TH ") || !strings.Contains(page, ".SH EXAMPLES\n") ||
			strings.Contains(page, "`") {
			t.Errorf("%s: %v\n%s", name, err, page)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "sbf-apply.1"))
	if !strings.Contains(string(b), `\fB\-\-target\fR \fINAME\fR`) {
		t.Errorf("sbf-apply.1 names no --target NAME:\n%s", b)
	}
}
