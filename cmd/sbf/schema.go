package main

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/spec"
)

func (a *app) schemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of .sandboxforge.toml (for editor completion)",
		Long: "schema prints a JSON Schema of the workspace file. Editors using Taplo (Even Better TOML)\n" +
			"pick it up from a '#:schema PATH' comment on the spec's first line.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			b, err := spec.JSONSchema()
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(append(b, '\n'))
			return err
		},
	}
}
