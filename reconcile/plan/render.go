package plan

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/termsafe"
)

// Summary counts a plan the way people read plans: a replace both adds
// and destroys.
type Summary struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// Summary counts the plan's actions.
func (p *Plan) Summary() Summary { return Count(p.Actions) }

// Count counts actions as a plan's summary does.
func Count(actions []Action) Summary {
	var s Summary
	for _, a := range actions {
		if a.Bootstrap {
			continue // part of its sandbox's create
		}
		switch a.Kind {
		case Create, Adopt:
			s.Add++
		case Replace:
			s.Add++
			s.Destroy++
		case Delete, Expire:
			s.Destroy++
		default:
			s.Change++
		}
	}
	return s
}

// Symbol marks an action in human output.
func (k Kind) Symbol() string {
	switch k {
	case Create, Adopt:
		return "+"
	case Replace:
		return "-/+"
	case Delete, Expire:
		return "-"
	}
	return "~"
}

// Style decorates human output; the zero value prints plain text.
type Style struct {
	Color bool
}

func (s Style) paint(k Kind, text string) string {
	if !s.Color {
		return text
	}
	code := "33" // yellow: changes
	switch k {
	case Create, Adopt:
		code = "32"
	case Delete, Expire:
		code = "31"
	case Replace:
		code = "35"
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Render writes the plan for people. The text is deterministic, so golden
// tests compare it byte for byte.
func (p *Plan) Render(w io.Writer, st Style) {
	switch {
	case len(p.Actions) == 0 && len(p.Problems) > 0:
		// Not "no changes": sbf could not look (issue 40).
		fmt.Fprintf(w, "Nothing could be planned for %s: what apply would change there is unknown (below).\n",
			strings.Join(p.unplanned(), ", "))
	case len(p.Actions) == 0:
		fmt.Fprintln(w, "No changes. Sandboxes match the configuration.")
	default:
		width := 0
		for _, a := range p.Actions {
			width = max(width, len(a.Subject()))
		}
		fmt.Fprintln(w, "sbf will perform these actions:")
		fmt.Fprintln(w)
		for _, a := range p.Actions {
			if a.Bootstrap {
				continue // an ad-hoc sandbox's create includes it
			}
			line := fmt.Sprintf("%3s %-*s  %-8s %s", a.Kind.Symbol(), width, a.Subject(), a.Kind, a.Cause)
			if a.Kind == Adopt {
				// An adopt reads as the create it stands in for.
				how := "warm"
				if a.Import {
					how = "import"
				}
				line = fmt.Sprintf("%3s %-*s  create (%s: %s)", a.Kind.Symbol(), width, a.Subject(), how, a.Instance)
				if cause, _ := strings.CutPrefix(a.Cause, "not found"); cause != "" && !a.Import {
					line += ", " + strings.TrimPrefix(cause, "; ")
				}
			}
			fmt.Fprintln(w, st.paint(a.Kind, line))
		}
	}
	if len(p.Refresh) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "State corrections (no change to any VM):")
		for _, r := range p.Refresh {
			fmt.Fprintf(w, "  %s: %s\n", r.Sandbox, termsafe.Line(r.Note))
		}
	}
	p.renderLeases(w)
	if len(p.Actions) > 0 {
		s := p.Summary()
		fmt.Fprintf(w, "\nPlan: %d to add, %d to change, %d to destroy.\n", s.Add, s.Change, s.Destroy)
	}
}

// renderLeases lists the lease ends the plan records (no VM changes for
// them), so a renewal is never silent. A sandbox that could not be
// planned claims none: nobody knows yet what apply will make of it.
func (p *Plan) renderLeases(w io.Writer) {
	unplanned := setOf(p.unplanned())
	var shown []LeaseRenewal
	for _, l := range p.Leases {
		if !unplanned[l.Sandbox] {
			shown = append(shown, l)
		}
	}
	if len(shown) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Leases (no change to any VM):")
	for _, l := range shown {
		fmt.Fprintf(w, "  %s: %s\n", l.Sandbox, l.Describe())
	}
}

// unplanned names the sandboxes that could not be planned, once each.
func (p *Plan) unplanned() []string {
	var names []string
	for _, pr := range p.Problems {
		if !slices.Contains(names, pr.Sandbox) {
			names = append(names, pr.Sandbox)
		}
	}
	return names
}

// Describe says what becomes of the lease: "renewed until …".
func (l LeaseRenewal) Describe() string {
	end := l.New.UTC().Format(time.RFC3339)
	switch {
	case l.Acquired:
		return "acquired until " + end
	case l.Old != nil && l.New.Before(*l.Old):
		return fmt.Sprintf("shortened to end %s (was %s)", end, l.Old.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("renewed until %s (was %s)", end, l.Old.UTC().Format(time.RFC3339))
}

// RenderProblems writes what could not be planned.
func (p *Plan) RenderProblems(w io.Writer) {
	if len(p.Problems) == 0 {
		return
	}
	fmt.Fprintln(w, "Cannot plan these sandboxes:")
	for _, pr := range p.Problems {
		// A problem may quote what a backend or a guest said: escaped (termsafe).
		fmt.Fprintf(w, "  %s: %s\n", pr.Sandbox, strings.ReplaceAll(termsafe.Text(pr.Message), "\n", "\n    "))
	}
}

// Change is one line of `sbf plan --json`. A spare's change names its
// pool instead of a sandbox; an adopt names the spares it tries (warm).
type Change struct {
	Sandbox  string   `json:"sandbox"`
	Pool     string   `json:"pool,omitempty"`
	Action   Kind     `json:"action"`
	Cause    string   `json:"cause"`
	Instance string   `json:"instance"`
	Driver   string   `json:"driver"`
	Drift    bool     `json:"drift"`
	Warm     []string `json:"warm,omitempty"`
	Import   bool     `json:"import,omitempty"`
	Template string   `json:"memory_template,omitempty"`
	// Bootstrap is a step of a new ad-hoc sandbox's create, not counted
	// in the summary.
	Bootstrap bool `json:"bootstrap,omitempty"`
}

// Change gives the action as a line of `sbf plan --json`.
func (a Action) Change() Change {
	return Change{Sandbox: a.Sandbox, Pool: a.Pool, Action: a.Kind, Cause: a.Cause, Instance: a.Instance,
		Driver: a.Driver, Drift: a.Drift, Warm: a.Warm, Import: a.Import, Template: a.Template,
		Bootstrap: a.Bootstrap}
}

// Report is `sbf plan --json`.
type Report struct {
	Changes  []Change  `json:"changes"`
	Summary  Summary   `json:"summary"`
	Refresh  []Refresh `json:"state_corrections"`
	Problems []Problem `json:"problems"`
	// LeaseRenewals are the lease ends apply records besides the changes
	// (renewals alone are no change for --detailed-exitcode).
	LeaseRenewals []LeaseRenewal `json:"lease_renewals"`
	// InProgress names the sbf changing the workspace while the plan was
	// made, when one was.
	InProgress *flock.Holder `json:"in_progress,omitempty"`
}

// Report gives the plan as data.
func (p *Plan) Report() Report {
	r := Report{Changes: []Change{}, Summary: p.Summary(), Refresh: p.Refresh, Problems: p.Problems,
		LeaseRenewals: append([]LeaseRenewal{}, p.Leases...)}
	for _, a := range p.Actions {
		r.Changes = append(r.Changes, a.Change())
	}
	if r.Refresh == nil {
		r.Refresh = []Refresh{}
	}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	return r
}

// Only keeps the parts of the plan about the named sandboxes (all when
// names is empty).
func (p *Plan) Only(names []string) *Plan {
	if len(names) == 0 {
		return p
	}
	keep := setOf(names)
	return p.filter(func(sandbox string) bool { return keep[sandbox] })
}

// Without drops the parts of the plan about the named sandboxes.
func (p *Plan) Without(names []string) *Plan {
	if len(names) == 0 {
		return p
	}
	drop := setOf(names)
	return p.filter(func(sandbox string) bool { return !drop[sandbox] })
}

// Holding keeps the steps (actions, record corrections, lease ends) on
// the sandboxes held says a run holds, and the sandbox-less ones (spares')
// when spares, and every renewal alone (RenewalsAlone: recorded without
// the sandbox's lock); every problem stays, as the run's first plan found
// them.
func (p *Plan) Holding(held func(sandbox string) bool, spares bool) *Plan {
	keep := func(sandbox string) bool { return held(sandbox) || spares && sandbox == "" }
	out := p.filter(keep)
	alone := p.RenewalsAlone()
	out.Leases = nil
	for _, l := range p.Leases {
		if keep(l.Sandbox) || alone[l.Sandbox] {
			out.Leases = append(out.Leases, l)
		}
	}
	out.Problems = p.Problems
	return out
}

// Targeted says whether a run with these targets acts on the sandbox:
// none names every sandbox.
func Targeted(targets []string, sandbox string) bool {
	return len(targets) == 0 || slices.Contains(targets, sandbox)
}

func setOf(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

func (p *Plan) filter(keep func(sandbox string) bool) *Plan {
	out := &Plan{}
	for _, a := range p.Actions {
		if keep(a.Sandbox) {
			out.Actions = append(out.Actions, a)
		}
	}
	for _, r := range p.Refresh {
		if keep(r.Sandbox) {
			out.Refresh = append(out.Refresh, r)
		}
	}
	for _, pr := range p.Problems {
		if keep(pr.Sandbox) {
			out.Problems = append(out.Problems, pr)
		}
	}
	for _, l := range p.Leases {
		if keep(l.Sandbox) {
			out.Leases = append(out.Leases, l)
		}
	}
	return out
}
