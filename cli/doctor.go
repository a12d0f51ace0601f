package cli

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/buildinfo"
	"github.com/sandboxforge/sbf/internal/confine"
	"github.com/sandboxforge/sbf/reconcile"
)

type doctorReport struct {
	WorkspaceRoot string              `json:"workspace_root"`
	Usable        bool                `json:"usable"` // every backend the workspace uses can run a VM
	Drivers       []drivers.Diagnosis `json:"drivers"`
	// Others are the backends the workspace does not use (--all): whether
	// this host could run them, which does not decide Usable.
	Others []drivers.Diagnosis `json:"other_drivers,omitempty"`
	// Host are checks no backend owns: how compose files are confined as
	// they load. They warn; they do not decide Usable.
	Host []drivers.Check `json:"host"`
	// Skipped are the checks --skip left out.
	Skipped []string `json:"skipped,omitempty"`
}

// hostChecks says what confines the compose loader on this host.
func hostChecks() []drivers.Check {
	rep := confine.Probe()
	c := drivers.Check{Name: "compose-confinement", Status: drivers.CheckOK,
		Detail: "compose files load in a child with no environment, confined by " + rep.String()}
	if !rep.Full() {
		c.Status = drivers.CheckWarn
		c.Detail = "compose files load in a child with no environment, " + rep.String() +
			"; what is not enforced rests on sbf's check of every path they name (inside the workspace, after links)"
		if runtime.GOOS == "linux" {
			c.NextSteps = []string{"run a kernel with Landlock ABI 6 or newer (Linux 6.12+), enabled at boot " +
				"(landlock in CONFIG_LSM or the lsm= parameter)"}
		}
	}
	return []drivers.Check{c}
}

func (a *app) doctorCommand() *cobra.Command {
	var asJSON, all bool
	var only string
	var skip []string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say whether this machine can run the workspace's VMs, why not, and what to do",
		Long: "Checks, for each backend the workspace uses, everything a first run needs: binaries and versions,\n" +
			"hardware virtualization or software emulation, the user, the guest image (downloadable, cached or\n" +
			"built), memory and disk headroom and the state folder. Exits 0 when every backend can run a VM.",
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			rep, err := a.doctor(all)
			if err != nil {
				return err
			}
			if only != "" {
				rep = rep.only(only)
			}
			rep = rep.without(skip)
			if asJSON {
				if err := writeJSON(a.stdout, rep); err != nil {
					return err
				}
			} else {
				a.printDoctor(rep)
			}
			if !rep.Usable {
				return silentExit(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "also say whether this host could run each backend the workspace does not use")
	cmd.Flags().
		StringVar(&only, "only", "", "report (and exit by) only the checks whose name starts with `NAME` (image, "+
			"virtualization, ...)")
	cmd.Flags().StringArrayVar(&skip, "skip", nil, "leave out the checks whose name starts with `NAME` "+
		"(what a script fixes next: make run builds limactl and the image); repeatable")
	return cmd
}

// without leaves out the checks named with any of prefixes, and says
// which: usable then depends on the others.
func (rep doctorReport) without(prefixes []string) doctorReport {
	if len(prefixes) == 0 {
		return rep
	}
	skipped := func(name string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	out := rep
	out.Usable, out.Drivers, out.Host = true, nil, nil
	for _, c := range rep.Host {
		if !skipped(c.Name) {
			out.Host = append(out.Host, c)
		}
	}
	for _, d := range rep.Drivers {
		kept := drivers.Diagnosis{Driver: d.Driver}
		for _, c := range d.Checks {
			if skipped(c.Name) {
				out.Skipped = append(out.Skipped, c.Name)
			} else {
				kept.Add(c)
			}
		}
		kept.Finish()
		kept.Summary = d.Summary
		if kept.Usable != d.Usable {
			kept.Summary = "usable as far as the checks run tell (some skipped, below)"
		}
		out.Drivers = append(out.Drivers, kept)
		out.Usable = out.Usable && kept.Usable
	}
	return out
}

// only keeps the checks named with prefix; usable then depends on them.
func (rep doctorReport) only(prefix string) doctorReport {
	out := doctorReport{WorkspaceRoot: rep.WorkspaceRoot, Usable: true}
	for _, c := range rep.Host {
		if strings.HasPrefix(c.Name, prefix) {
			out.Host = append(out.Host, c)
		}
	}
	for _, d := range rep.Drivers {
		kept := drivers.Diagnosis{Driver: d.Driver}
		for _, c := range d.Checks {
			if strings.HasPrefix(c.Name, prefix) {
				kept.Add(c)
			}
		}
		kept.Finish()
		kept.Summary = fmt.Sprintf("%d %s check(s)", len(kept.Checks), prefix)
		out.Drivers = append(out.Drivers, kept)
		out.Usable = out.Usable && kept.Usable
	}
	return out
}

// doctor diagnoses every backend the workspace's sandboxes use (or, with
// none declared, the one [vm] would use).
func (a *app) doctor(all bool) (doctorReport, error) {
	r, err := a.loadSpec(nil)
	if err != nil {
		return doctorReport{}, err
	}
	c, err := a.clock()
	if err != nil {
		return doctorReport{}, err
	}
	if _, err := a.operator(); err != nil {
		return doctorReport{}, err
	}
	rep := doctorReport{WorkspaceRoot: r.Root, Usable: true, Host: hostChecks()}
	rep.Drivers = reconcile.Diagnose(a.context(), a.driverEnv(c), r)
	for _, d := range rep.Drivers {
		rep.Usable = rep.Usable && d.Usable
	}
	if all {
		rep.Others = reconcile.DiagnoseHost(a.context(), a.driverEnv(c), r, rep.Drivers)
	}
	return rep, nil
}

func (a *app) printChecks(checks []drivers.Check) {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Status, c.Name, c.Detail)
		for _, step := range c.NextSteps {
			fmt.Fprintf(w, "\t\tnext: %s\n", step)
		}
	}
	w.Flush()
}

func (a *app) printDoctor(rep doctorReport) {
	for _, d := range append(slices.Clone(rep.Drivers), rep.Others...) {
		fmt.Fprintf(a.stdout, "%s: %s\n", d.Driver, d.Summary)
		a.printChecks(d.Checks)
	}
	if len(rep.Host) > 0 {
		fmt.Fprintln(a.stdout, "host:")
		a.printChecks(rep.Host)
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(a.stdout, "\nNot checked (--skip): %s.\n", strings.Join(rep.Skipped, ", "))
	}
	if !rep.Usable {
		fmt.Fprintln(
			a.stdout,
			"\nNot every backend can run a VM here: fix the failed checks above, then run sbf doctor again.",
		)
	}
	fmt.Fprintf(a.stdout, "\n%s\n", versionLine(buildinfo.Read())) // which sbf said all this, for a bug report
}
