package cli

import (
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// valueName is the annotation holding the word a flag's value is shown
// as (--ttl DURATION): pflag takes it from backquotes in the usage, which
// then show up in shell completion descriptions, so polishHelp moves it
// here and the help and man pages read it back.
const valueName = "sbf_value_name"

// valueWords name the values of flags whose usage names none, where the
// flag's type alone (string, stringArray, int) would say too little.
var valueWords = map[string]string{
	"target": "NAME", "ttl": "DURATION", "snapshot": "SNAPSHOT", "driver": "DRIVER", "parallelism": "N",
	"limit": "N", "tail": "N", "max-output": "BYTES", "max-body-bytes": "BYTES", "max-sessions": "N",
	"offset": "BYTES", "output": "FORMAT",
}

// typeWords name the values of the other flags by their type.
var typeWords = map[string]string{
	"duration": "DURATION", "int": "N", "int64": "N", "int32": "N", "uint": "N", "uint64": "N",
	"float64": "NUMBER", "stringToString": "KEY=VALUE",
}

var templateFuncsOnce sync.Once

// polishWhenShown arranges for polishHelp to run when help text is first
// shown, and returns the function that runs it: walking every command and
// flag costs each start ~0.2 ms, and most runs (sbf exec above all) show
// none. The text shows in help and usage, in shell completion's
// descriptions (runIn) and in man pages (docs man).
func polishWhenShown(root *cobra.Command) func() {
	var once sync.Once
	polish := func() { once.Do(func() { polishHelp(root) }) }
	help, usage := root.HelpFunc(), root.UsageFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) { polish(); help(c, args) })
	root.SetUsageFunc(func(c *cobra.Command) error { polish(); return usage(c) })
	return polish
}

// polishHelp gives every command of the tree its examples and every flag
// a value word a person reads, and makes help print those words.
func polishHelp(root *cobra.Command) {
	// cobra keeps template functions in one map for the process; in-process
	// runs build command trees concurrently, so it is written once.
	templateFuncsOnce.Do(func() { cobra.AddTemplateFunc("flagUsages", flagUsages) })
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages", "flagUsages .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages", "flagUsages .InheritedFlags")
	root.SetUsageTemplate(t)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		// Markdown's backquotes read as noise in a terminal and in roff;
		// the help's own quoting is '...'.
		c.Short, c.Long = strings.ReplaceAll(c.Short, "`", "'"), strings.ReplaceAll(c.Long, "`", "'")
		if c.Example == "" {
			c.Example = commandExamples[strings.TrimPrefix(c.CommandPath(), "sbf ")]
		}
		c.Flags().VisitAll(nameValue)
		c.PersistentFlags().VisitAll(nameValue)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// nameValue moves a flag's value word out of its usage into valueName.
func nameValue(f *pflag.Flag) {
	if _, done := f.Annotations[valueName]; done {
		return
	}
	name, _ := pflag.UnquoteUsage(f)
	if strings.Contains(f.Usage, "`") {
		f.Usage = strings.ReplaceAll(f.Usage, "`", "")
	} else if name != "" {
		name = valueWord(f, name)
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[valueName] = []string{name}
}

func valueWord(f *pflag.Flag, typeName string) string {
	if w, ok := valueWords[f.Name]; ok {
		return w
	}
	if w, ok := typeWords[typeName]; ok {
		return w
	}
	return strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// flagUsages is pflag's FlagUsages with the value words of valueName.
func flagUsages(fs *pflag.FlagSet) string {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, usage := flagValue(f)
		if name != "" {
			left += " " + name
		}
		switch {
		case f.NoOptDefVal == "" || f.Value.Type() == "bool":
		case f.Value.Type() == "string":
			left += fmt.Sprintf("[=%q]", f.NoOptDefVal)
		default:
			left += "[=" + f.NoOptDefVal + "]"
		}
		if showDefault(f) {
			if f.Value.Type() == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		width = max(width, len(left))
		rows = append(rows, row{left, usage})
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s   %s\n", width, r.left, strings.ReplaceAll(r.usage, "\n", "\n"+strings.Repeat(" ", width+3)))
	}
	return strings.TrimRight(b.String(), " \n")
}

// flagValue is the word a flag's value shows as, and its usage.
func flagValue(f *pflag.Flag) (name, usage string) {
	if v, ok := f.Annotations[valueName]; ok && len(v) == 1 {
		return v[0], f.Usage
	}
	return pflag.UnquoteUsage(f)
}

func showDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s", "<nil>", "map[]":
		return false
	}
	return true
}
