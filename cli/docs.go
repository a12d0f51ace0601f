package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxforge/sbf/internal/atomicfile"
)

func (a *app) docsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "docs",
		Short: "Write sbf's documentation in other formats (man pages)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page for sbf and each of its commands into DIR (sbf.1, sbf-apply.1, ...)",
		Long: "man writes section 1 man pages, one per command, from the same text as --help: the packages\n" +
			"install them, and MANPATH=DIR man sbf-apply reads one from a checkout.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, list []string) error {
			a.polish()
			n, err := writeManPages(cmd.Root(), list[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %d man pages into %s\n", n, list[0])
			return nil
		},
	})
	return cmd
}

// writeManPages writes one page per visible command below root.
func writeManPages(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	n := 0
	var walk func(*cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.Name() == "help" {
			return nil
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		if err := atomicfile.WriteFile(filepath.Join(dir, name+".1"), []byte(manPage(c)), 0o644); err != nil {
			return err
		}
		n++
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return n, walk(root)
}

// manPage is c's help as roff. It carries no date: the pages are made at
// build time and must come out the same from the same source.
func manPage(c *cobra.Command) string {
	var b strings.Builder
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"sbf %s\" \"sbf manual\"\n", strings.ToUpper(name), version)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(name), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roff(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffText(desc))
	if flags := manFlags(c.NonInheritedFlags()); flags != "" {
		fmt.Fprintf(&b, ".SH OPTIONS\n%s", flags)
	}
	if flags := manFlags(c.InheritedFlags()); flags != "" {
		fmt.Fprintf(&b, ".SH GLOBAL OPTIONS\n%s", flags)
	}
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roffText(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, roff(strings.ReplaceAll(c.Parent().CommandPath(), " ", "-"))+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, roff(strings.ReplaceAll(sub.CommandPath(), " ", "-"))+"(1)")
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
	}
	return b.String()
}

func manFlags(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		head := "\\fB\\-\\-" + roff(f.Name) + "\\fR"
		if f.Shorthand != "" {
			head = "\\fB\\-" + roff(f.Shorthand) + "\\fR, " + head
		}
		name, usage := flagValue(f)
		if name != "" {
			head += " \\fI" + roff(name) + "\\fR"
		}
		if showDefault(f) {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(&b, ".TP\n%s\n%s\n", head, roffText(usage))
	})
	return b.String()
}

// roff escapes text for one line of roff.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffText escapes lines of text; a line starting with . or ' would be a
// request.
func roffText(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		l = roff(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
