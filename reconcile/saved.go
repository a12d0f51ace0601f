package reconcile

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/state"
)

// SavedPlan is `sbf plan --out FILE`: the plan plus the state it was made
// against. Applying it refuses when the state moved on (another apply ran)
// or when planning again now gives different actions.
type SavedPlan struct {
	FormatVersion int           `json:"format_version"`
	WorkspaceRoot string        `json:"workspace_root"`
	Lineage       string        `json:"lineage"`
	Serial        int64         `json:"serial"`
	Targets       []string      `json:"targets,omitempty"`
	CreatedAt     time.Time     `json:"created_at"`
	Actions       []plan.Action `json:"actions"`
}

const savedPlanFormat = 1

// Save writes the plan a dry run produced.
func (r *Result) Save(path string, targets []string, now time.Time) error {
	sp := SavedPlan{FormatVersion: savedPlanFormat, WorkspaceRoot: r.Resolved.Root, Lineage: r.recorded.Lineage,
		Serial: r.recorded.Serial, Targets: targets, CreatedAt: now.UTC(), Actions: r.Plan.Actions}
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadSavedPlan loads a plan file.
func ReadSavedPlan(path string) (*SavedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plan file: %w", err)
	}
	var sp SavedPlan
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, fmt.Errorf("%s is not an sbf plan file (%v)", path, err)
	}
	if sp.FormatVersion == 0 {
		return nil, fmt.Errorf("%s is not an sbf plan file (it has no format_version): write one with "+
			"'sbf plan --out FILE'", path)
	}
	if sp.FormatVersion > savedPlanFormat {
		return nil, fmt.Errorf("%s was written by a newer sbf (plan format %d)", path, sp.FormatVersion)
	}
	return &sp, nil
}

func (sp *SavedPlan) check(rec *state.File, fresh *plan.Plan) error {
	stale := func(why string) error {
		return coded.New(coded.StalePlan, map[string]any{"lineage": sp.Lineage, "serial": sp.Serial},
			"saved plan is stale: %s; run 'sbf plan' again", why)
	}
	switch {
	case sp.Lineage != rec.Lineage:
		return stale(fmt.Sprintf("it belongs to another state history (lineage %s, now %s)", sp.Lineage, rec.Lineage))
	case sp.Serial != rec.Serial:
		return stale(fmt.Sprintf("the state changed since it was made (serial %d, now %d)", sp.Serial, rec.Serial))
	}
	key := func(a plan.Action) string { return a.Sandbox + "\x00" + string(a.Kind) + "\x00" + a.Cause }
	if !slices.EqualFunc(sp.Actions, fresh.Actions, func(a, b plan.Action) bool { return key(a) == key(b) }) {
		return stale("the desired state or the world changed since it was made")
	}
	return nil
}
