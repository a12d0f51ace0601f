package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// terraformFlags are the flags sbf shares with Terraform, which spells
// them with one dash: `sbf apply -auto-approve` reads as --auto-approve.
var terraformFlags = map[string]bool{
	"auto-approve": true, "detailed-exitcode": true, "out": true, "target": true, "json": true,
	"lock-timeout": true, "parallelism": true,
}

// terraformSpellings rewrites Terraform's single-dash spellings of those
// flags before cobra reads them (it would take -auto-approve for -a -u
// -t ...). Nothing after "--" is touched: that is the guest's command.
func terraformSpellings(args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			continue
		}
		if name, _, _ := strings.Cut(a[1:], "="); terraformFlags[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// flagError words a flag cobra could not parse: the flag meant, when one
// is near, and (exit 2, or code) the command's help.
func flagError(cmd *cobra.Command, err error, code int) error {
	msg := err.Error()
	if name := unknownFlag(msg); name != "" {
		if near := nearestFlag(cmd, name); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return &exitError{code: code, err: errors.New(msg), hint: true}
}

// unknownFlag is the name pflag could not find: "--naem" → "naem", and
// "-naem" (read as shorthands) → "naem".
func unknownFlag(msg string) string {
	var name string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: ") && strings.Contains(msg, " in -"):
		_, name, _ = strings.Cut(msg, " in -")
	default:
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	return name
}

// nearestFlag is the command's flag spelled most like name, if any is
// close enough to be what was meant.
func nearestFlag(cmd *cobra.Command, name string) string {
	best, bestDist := "", max(2, len(name)/3)+1
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
