package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/reconcile/plan"
)

// applyReport is the --json output of commands that converge.
type applyReport struct {
	Plan    plan.Report `json:"plan"`
	Applied bool        `json:"applied"`
	// Outcome says what carrying the plan out did (null when it did not
	// run): what was done, what failed and why, what was not attempted.
	Outcome    *reconcile.OutcomeReport  `json:"outcome"`
	RolledBack []string                  `json:"rolled_back,omitempty"`
	Sandboxes  []reconcile.SandboxStatus `json:"sandboxes"`
	Warnings   []string                  `json:"warnings,omitempty"`
	Error      *coded.Error              `json:"error"`
}

// applyReportOf shapes a convergence for --json: lists are [] when empty,
// never null, whatever stopped the run.
func applyReportOf(res *reconcile.Result, err error) applyReport {
	rep := applyReport{Plan: (&plan.Plan{}).Report(), Sandboxes: []reconcile.SandboxStatus{},
		Error: coded.Of(err, coded.Unknown)}
	if res == nil {
		return rep
	}
	if res.Plan != nil {
		rep.Plan = res.Plan.Report()
	}
	rep.Applied, rep.Sandboxes, rep.Warnings, rep.RolledBack = res.Applied, nonNil(res.Status()), res.Warnings,
		res.RolledBack
	if res.Outcome != nil {
		o := res.Outcome.Report()
		rep.Outcome = &o
	}
	return rep
}

// printOutcome says what an applied plan did: the lease ends recorded,
// then counts of what was done (never a failed change), then the table.
func (a *app) printOutcome(cmdName string, res *reconcile.Result, targets []string, now time.Time) {
	a.printLeases(cmdName, res, targets, now)
	if cmdName == "up" || cmdName == "extend" || cmdName == "destroy" {
		// Their change is the lease itself, said above.
		if res.Plan.Empty() && len(res.Plan.Problems) == 0 {
			a.printStatusTable(touchedRows(res, targets), now, false)
			return
		}
	}
	switch {
	case len(res.Plan.Problems) > 0 && len(res.Plan.Actions) == 0:
		n := len(res.Plan.Problems)
		what := "1 sandbox"
		if n != 1 {
			what = fmt.Sprintf("%d sandboxes", n)
		}
		fmt.Fprintf(a.stdout, "Nothing was changed: %s could not be planned (the reasons follow).\n", what)
	case res.Plan.Empty():
		fmt.Fprintln(a.stdout, "No changes. Sandboxes match the configuration.")
	default:
		fmt.Fprintln(a.stdout, outcomeLine(res))
	}
	a.printStatusTable(touchedRows(res, targets), now, false)
}

// touchedRows are the status rows after a run: sandboxes not over, and
// those the run named or acted on (a destroy shows what it destroyed).
func touchedRows(res *reconcile.Result, targets []string) []reconcile.SandboxStatus {
	touched := map[string]bool{}
	for _, n := range slices.Concat(targets, res.RolledBack) {
		touched[n] = true
	}
	for _, a := range res.Plan.Actions {
		touched[a.Sandbox] = true
	}
	for _, r := range res.Plan.Refresh {
		touched[r.Sandbox] = true
	}
	var out []reconcile.SandboxStatus
	for _, row := range res.Status() {
		if !row.Ended() || touched[row.Name] {
			out = append(out, row)
		}
	}
	return out
}

// outcomeLine counts what an applied plan did: "Apply complete: 1 added, 0
// changed, 0 destroyed." or "Apply failed: 0 of 1 added, 0 changed, 0
// destroyed; 1 failed."
func outcomeLine(res *reconcile.Result) string {
	planned := res.Plan.Summary()
	o := res.Outcome
	if o == nil || o.OK() {
		return fmt.Sprintf("Apply complete: %d added, %d changed, %d destroyed.", planned.Add, planned.Change,
			planned.Destroy)
	}
	done := o.DoneSummary()
	count := func(d, p int, what string) string {
		if d == p {
			return fmt.Sprintf("%d %s", d, what)
		}
		return fmt.Sprintf("%d of %d %s", d, p, what)
	}
	line := fmt.Sprintf("Apply failed: %s, %s, %s; %d failed", count(done.Add, planned.Add, "added"),
		count(done.Change, planned.Change, "changed"), count(done.Destroy, planned.Destroy, "destroyed"),
		len(o.Failed))
	if n := len(o.NotAttempted); n > 0 {
		line += fmt.Sprintf(", %d not attempted", n)
	}
	return line + "."
}

// printLeases says, per sandbox, what the run did to its lease: each end
// it recorded (renewed, acquired, extended), and for up, extend and
// destroy what became of the named sandboxes' leases otherwise.
func (a *app) printLeases(cmdName string, res *reconcile.Result, targets []string, now time.Time) {
	said := map[string]bool{}
	for _, name := range res.RolledBack {
		fmt.Fprintf(a.stdout, "%s: not created; its lease was dropped and whatever was made of it deleted.\n", name)
		said[name] = true
	}
	if res.Outcome != nil {
		for _, l := range res.Outcome.Leases {
			if said[l.Sandbox] {
				continue
			}
			said[l.Sandbox] = true
			fmt.Fprintf(a.stdout, "%s: lease %s until %s (in %s).\n", l.Sandbox, leaseVerb(cmdName, l),
				l.New.UTC().Format(time.RFC3339), shortDuration(l.New.Sub(now)))
		}
	}
	if cmdName != "up" && cmdName != "extend" && cmdName != "destroy" {
		return
	}
	if len(targets) == 0 {
		targets = res.SortedSandboxes()
	}
	for _, name := range targets {
		if said[name] {
			continue
		}
		l, held := res.Resolved.Config.Leases[name]
		switch {
		case (cmdName == "destroy" || !held) && res.Outcome != nil && res.Outcome.FailedSandbox(name):
			fmt.Fprintf(a.stdout, "%s: lease dropped; deleting its VM failed (below).\n", name)
		case cmdName == "destroy" && !deletesVM(res.Plan, name):
			fmt.Fprintf(a.stdout, "%s: %s\n", name, nothingToDestroy(res, name))
		case cmdName == "destroy" || !held:
			fmt.Fprintf(a.stdout, "%s: lease dropped; its VM is deleted.\n", name)
		default:
			fmt.Fprintf(a.stdout, "%s: lease ends %s (in %s).\n", name, l.ExpiresAt.UTC().Format(time.RFC3339),
				shortDuration(l.ExpiresAt.Sub(now)))
		}
	}
}

// deletesVM says whether the plan deletes a sandbox's VM.
func deletesVM(p *plan.Plan, name string) bool {
	return slices.ContainsFunc(p.Actions, func(x plan.Action) bool {
		return x.Sandbox == name && (x.Kind == plan.Delete || x.Kind == plan.Expire || x.Kind == plan.Replace)
	})
}

// nothingToDestroy says what a destroy found of a sandbox that had no VM
// to delete: one destroyed before is "already gone", however often a
// destroy of every sandbox names it again (issue 40), one never made had
// nothing, and one whose VM vanished by itself loses its lease now.
func nothingToDestroy(res *reconcile.Result, name string) string {
	rec, recorded := res.Recorded(name)
	corrected := slices.ContainsFunc(res.Plan.Refresh, func(r plan.Refresh) bool { return r.Sandbox == name })
	switch {
	case !recorded:
		return "no lease and no VM: nothing to destroy."
	case rec.Phase.Terminal() && !corrected:
		return "already gone (no lease, no VM)."
	}
	return "lease dropped; it had no VM to delete."
}

func leaseVerb(cmdName string, l plan.LeaseRenewal) string {
	switch {
	case l.Acquired:
		return "acquired"
	case l.Old != nil && l.New.Before(*l.Old):
		return "shortened"
	case cmdName == "extend":
		return "extended"
	}
	return "renewed"
}

// printErrors writes each failure of a run on a line of its own. An error
// may quote a client or a guest (a command, a guest path, a guest's
// message): it reaches the terminal escaped (termsafe).
func printErrors(w io.Writer, err error) {
	for _, e := range unjoin(err) {
		msg := strings.TrimRight(e.Error(), "\n")
		fmt.Fprintf(w, "sbf: %s\n", termsafe.Text(msg))
	}
}

// unjoin splits an errors.Join into its parts (nested joins too).
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = slices.Concat(out, unjoin(e))
	}
	return out
}
