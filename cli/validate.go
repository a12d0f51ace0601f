package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

type validateReport struct {
	Valid         bool         `json:"valid"`
	WorkspaceRoot string       `json:"workspace_root"`
	WorkspaceID   string       `json:"workspace_id"`
	Sources       []string     `json:"sources"`
	Config        *spec.Config `json:"config"`
	// Ceilings are the operator's limits over the workspace: each bound,
	// where it came from and the value in effect.
	Ceilings []spec.Ceiling `json:"ceilings"`
	Errors   spec.Errors    `json:"errors"`
	Warnings spec.Errors    `json:"warnings"`
}

func (a *app) validateCommand() *cobra.Command {
	var asJSON, show, strict bool
	var sets []string
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the workspace's layered configuration",
		Long: "validate loads every layer (defaults, global config, .sandboxforge.toml, .sandboxforge.local.toml,\n" +
			"managed overrides, --set) and the compose files they name, and prints a one-line verdict; every\n" +
			"problem goes to stderr with its file:line:col. --show prints the resolved configuration, --json all\n" +
			"of it as data. It checks the shape without the environment: a ${VAR} the environment does not set\n" +
			"is a warning (--strict: an error); plan and apply need it. Exit status: 0 valid, 1 invalid, 2 usage error.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := spec.ParseSet(sets)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rep, err := a.validate(req, strict)
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(a.stdout, rep)
			} else {
				err = a.printValidation(rep, show)
			}
			if err != nil {
				return err
			}
			if !rep.Valid {
				return silentExit(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdict, the problems and the resolved configuration as JSON")
	cmd.Flags().BoolVar(&show, "show", false, "also print the resolved configuration")
	cmd.Flags().BoolVar(&strict, "strict", false, "an unset ${VAR} is an error, as it is for plan and apply")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a key for this run (`key.path=value`, repeatable)")
	return cmd
}

func (a *app) validate(req *spec.Request, strict bool) (*validateReport, error) {
	eng, err := a.engine("validate", engineFlags{})
	if err != nil {
		return nil, err
	}
	v, err := eng.ValidateWith(
		a.context(),
		spec.Options{Root: a.dir, Host: spec.CurrentHost(), ConfigHome: a.configHome(), Request: req},
		reconcile.ValidateOptions{EnvOptional: !strict},
	)
	if err != nil {
		return nil, err
	}
	rep := &validateReport{Valid: v.Valid(), WorkspaceRoot: v.Root, WorkspaceID: v.ID, Sources: []string{},
		Errors: v.Errors, Warnings: v.Warnings}
	if rep.Errors == nil {
		rep.Errors = spec.Errors{}
	}
	if rep.Warnings == nil {
		rep.Warnings = spec.Errors{}
	}
	if v.Resolved != nil {
		rep.Sources = v.Resolved.Sources
		if rep.Valid {
			rep.Config, rep.Ceilings = &v.Resolved.Config, v.Resolved.Ceilings
		}
	}
	return rep, nil
}

// printValidation writes the verdict on one line of stdout; problems and
// warnings go to stderr; show adds the resolved configuration.
func (a *app) printValidation(rep *validateReport, show bool) error {
	for _, w := range rep.Warnings {
		w.File = displayPath(rep.WorkspaceRoot, w.File)
		fmt.Fprintf(a.stderr, "sbf: warning: %s\n", termsafe.Text(w.Error()))
	}
	if !rep.Valid {
		files := map[string]bool{}
		for _, e := range rep.Errors {
			e.File = displayPath(rep.WorkspaceRoot, e.File)
			files[e.File] = true
			fmt.Fprintln(a.stderr, termsafe.Text(e.Error()))
		}
		fmt.Fprintf(a.stderr, "\nInvalid: %s in %s.\n", plural(len(rep.Errors), "problem"), plural(len(files), "file"))
		return nil
	}
	shown := make([]string, len(rep.Sources))
	for i, s := range rep.Sources {
		shown[i] = displayPath(rep.WorkspaceRoot, s)
	}
	fmt.Fprintf(a.stdout, "Valid: %s (%s); sandboxes: %s; from %s.\n", rep.WorkspaceRoot, rep.WorkspaceID,
		sandboxList(rep.Config), strings.Join(shown, ", "))
	if !show {
		return nil
	}
	out, err := rep.Config.TOML() // with the backend tables, which go-toml alone leaves out
	if err != nil {
		return fmt.Errorf("rendering the resolved configuration: %w", err)
	}
	fmt.Fprintln(a.stdout)
	if _, err = a.stdout.Write(out); err != nil {
		return err
	}
	return printCeilings(a.stdout, rep.WorkspaceRoot, rep.Ceilings)
}

// printCeilings shows the operator's limits as TOML comments, so --show
// stays a TOML document.
func printCeilings(w io.Writer, root string, ceilings []spec.Ceiling) error {
	if len(ceilings) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n# Operator ceilings: a workspace, its overrides or a request may lower these, never raise them.")
	for _, c := range ceilings {
		bound := fmt.Sprintf("ceiling %s from %s", shownLimit(c.Key, c.Ceiling), c.Source)
		if c.Ceiling == nil {
			bound = "no ceiling: the workspace decides"
		}
		if c.Value == nil { // a bound on each VM, not one value: none was set
			if _, err := fmt.Fprintf(w, "# %s = none  (%s)\n", c.Key, bound); err != nil {
				return err
			}
			continue
		}
		from := displayPath(root, c.ValueFrom)
		if from == spec.FromCeiling {
			from = "the ceiling"
		}
		if _, err := fmt.Fprintf(w, "# %s = %s  (%s; value from %s)\n", c.Key, shownLimit(c.Key, c.Value), bound,
			from); err != nil {
			return err
		}
	}
	return nil
}

// shownLimit is a limit's value, sizes also in binary units.
func shownLimit(key string, v any) string {
	if n, ok := v.(int64); ok && strings.HasSuffix(key, "_bytes") {
		return fmt.Sprintf("%d (%s)", n, bytesText(n))
	}
	return fmt.Sprint(v)
}

func sandboxList(c *spec.Config) string {
	if len(c.Sandboxes) == 0 {
		return "none declared (add a [sandboxes.NAME] table, or run 'sbf init')"
	}
	names := make([]string, 0, len(c.Sandboxes))
	for n := range c.Sandboxes {
		names = append(names, n)
	}
	return strings.Join(slices.Sorted(slices.Values(names)), ", ")
}

// displayPath shortens paths inside the workspace to workspace-relative
// ones; everything else stays as it is.
func displayPath(root, path string) string {
	if root == "" || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(root, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
