package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/spec"
)

// schemaFileName sits beside the spec and is committed with it: the spec's
// '#:schema' line names it relatively, so editors find it in every clone
// (.sandboxforge/, which git ignores, would not survive one).
const schemaFileName = ".sandboxforge.schema.json"

func (a *app) schemaCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of .sandboxforge.toml, or refresh a committed copy (--write)",
		Long: "schema prints a JSON Schema of the workspace file. Editors using Taplo (Even Better TOML) pick it up\n" +
			"from a '#:schema PATH' comment on the spec's first line, PATH relative to the spec. 'sbf init' writes\n" +
			"it to " + schemaFileName + " beside the spec and names it there: commit both. After upgrading sbf,\n" +
			"'sbf schema --write " + schemaFileName + "' refreshes it.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if path == "" {
				b, err := schemaBytes()
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(b)
				return err
			}
			if !filepath.IsAbs(path) {
				path = filepath.Join(a.dir, path)
			}
			changed, err := writeSchema(path)
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(a.stdout, "Wrote %s.\n", path)
			} else {
				fmt.Fprintf(a.stdout, "%s is up to date.\n", path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "write", "", "write the schema to `PATH` (relative to -C DIR) instead of printing it")
	return cmd
}

func schemaBytes() ([]byte, error) {
	b, err := spec.JSONSchema(drivers.Linked)
	if err != nil {
		return nil, fmt.Errorf("generating the schema: %w", err)
	}
	return append(b, '\n'), nil
}

// writeSchema replaces path atomically, and leaves it alone when it already
// holds this sbf's schema (no churn in the commit history).
func writeSchema(path string) (changed bool, err error) {
	b, err := schemaBytes()
	if err != nil {
		return false, err
	}
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return false, fmt.Errorf("writing the schema to %s: %w", path, err)
	}
	return true, nil
}
