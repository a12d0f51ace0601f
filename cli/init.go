package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// driverNames are auto plus every backend this binary registered.
func driverNames() []string { return append([]string{"auto"}, drivers.Names()...) }

// driverComment lists the choices in the starter file: the real backends,
// then those for tests.
func driverComment() string {
	var real, test []string
	for _, n := range drivers.Names() {
		if reg, _ := drivers.Lookup(n); reg.TestOnly {
			test = append(test, n)
		} else {
			real = append(real, n)
		}
	}
	c := "# " + strings.Join(append([]string{"auto"}, real...), " | ")
	if len(test) > 0 {
		c += "  (" + strings.Join(test, ", ") + ": tests and demos)"
	}
	return c
}

func (a *app) initCommand() *cobra.Command {
	var driver string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a starter .sandboxforge.toml declaring one sandbox",
		Long: "init writes a commented .sandboxforge.toml with one sandbox and, beside it, " + schemaFileName + ",\n" +
			"the JSON Schema its '#:schema' line names (commit both: editors then complete and check the spec in\n" +
			"every clone), and adds .sandboxforge/ and .sandboxforge.local.toml to .gitignore. It never overwrites a spec.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			driver = strings.ToLower(strings.TrimSpace(driver))
			if !slices.Contains(driverNames(), driver) {
				return usageErrorf("--driver %q: want one of %s", driver, strings.Join(driverNames(), ", "))
			}
			return a.initWorkspace(driver)
		},
	}
	cmd.Flags().
		StringVar(&driver, "driver", "auto", "backend to write into [vm] driver ("+strings.Join(driverNames(), ", ")+")")
	return cmd
}

func (a *app) initWorkspace(driver string) error {
	root, _, err := spec.WorkspaceIdentity(a.dir)
	if err != nil {
		return err
	}
	specPath := filepath.Join(root, spec.FileName)
	f, err := os.OpenFile(specPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; sbf init never overwrites a spec (edit it, or remove it first)", specPath)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", specPath, err)
	}
	_, werr := f.WriteString(starterSpec(driver))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", specPath, werr)
	}
	if _, err := writeSchema(filepath.Join(root, schemaFileName)); err != nil {
		return err
	}
	added, err := ensureGitignore(filepath.Join(root, ".gitignore"), spec.Dir+"/", spec.LocalFileName)
	if err != nil {
		return err
	}
	fmt.Fprintf(
		a.stdout,
		"Wrote %s (one sandbox: dev, driver %s) and %s, its schema: commit both.\n",
		specPath,
		driver,
		schemaFileName,
	)
	if len(added) > 0 {
		fmt.Fprintf(a.stdout, "Added %s to .gitignore.\n", strings.Join(added, " and "))
	}
	fmt.Fprintln(a.stdout, "Next: 'sbf validate' to check it, 'sbf plan' to see what 'sbf apply' would do.")
	return nil
}

// ensureGitignore appends the entries a .gitignore lacks, keeping every
// existing line as it was.
func ensureGitignore(path string, entries ...string) ([]string, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	present := map[string]bool{}
	for _, line := range strings.Split(string(old), "\n") {
		present[strings.TrimSpace(line)] = true
	}
	var buf bytes.Buffer
	buf.Write(old)
	var added []string
	for _, e := range entries {
		if present[e] || present[strings.TrimSuffix(e, "/")] || present["/"+e] {
			continue
		}
		if buf.Len() > 0 && !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
			buf.WriteByte('\n')
		}
		buf.WriteString(e + "\n")
		added = append(added, e)
	}
	if len(added) == 0 {
		return nil, nil
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return added, nil
}

func starterSpec(driver string) string {
	return `#:schema ./` + schemaFileName + `
# SandboxForge workspace. 'sbf plan' shows what 'sbf apply' would change.
# The schema named above, committed beside this file, describes every key
# to editors (Taplo, Even Better TOML); after upgrading sbf,
# 'sbf schema --write ` + schemaFileName + `' refreshes it.
# Personal overrides belong in .sandboxforge.local.toml (not committed).

[vm]                          # defaults for every sandbox
driver = "` + driver + `"` + strings.Repeat(" ", max(1, 19-len(driver))) + driverComment() + `
cpus = 2
memory_gib = 4
disk_gib = 20
ttl = "2h"                    # lease length; 'sbf extend dev 1h' adds time
mounts = []                   # host paths shared into the guest; none by default

[lease]
max_instances = 3             # sbf VMs alive on this host at once

[sandboxes.dev]               # one sandbox; declare more as [sandboxes.NAME]
# cpus = 4                    # any [vm] key can be overridden per sandbox
# compose = true              # converge the [compose] files inside it
# services = ["mysql", "redis"]
# ports = ["8080:80"]         # host:guest, on the host's loopback
`
}
