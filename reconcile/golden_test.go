package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"golang.org/x/tools/txtar"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// goldenWorkspaceID makes instance names in golden files stable:
// sbf-01234567-NAME.
const goldenWorkspaceID = "ws_0123456789ab"

// Golden planner cases, one per file in testdata/plan. Files:
//
//	now            the instant the plan is made (RFC 3339)
//	other files    the workspace: layers (leases in .sandboxforge/overrides.toml),
//	               compose files, .env files
//	guests.json    what running guests report (see guestsFromArchive)
//	recorded.json  the state file's "sandboxes" object
//	observed.json  {"DRIVER": [instances...] | "unavailable: reason"} — raw
//	               lists, so instances of other workspaces can be included
//	               (a template: {{shape "SANDBOX"}} and {{pool "POOL"}} are
//	               the shape hashes spares carry; "in_flight": true marks a
//	               spare a fill is still making)
//	mode           "pools": the pool planner's plan (ComputePools)
//	want           the rendered plan, then problems
func TestPlanGolden(t *testing.T) {
	testutil.RunGolden(t, "../testdata/plan/*.txtar", *update, func(t *testing.T, ar *txtar.Archive) string {
		p := planFromArchive(t, ar)
		var out bytes.Buffer
		p.Render(&out, plan.Style{})
		p.RenderProblems(&out)
		return out.String()
	})
}

func planFromArchive(t *testing.T, ar *txtar.Archive) *plan.Plan {
	ws := t.TempDir()
	reserved := map[string]bool{"now": true, "recorded.json": true, "observed.json": true, "guests.json": true,
		"want": true, "mode": true}
	for _, f := range ar.Files {
		if !reserved[f.Name] {
			testutil.WriteFile(t, filepath.Join(ws, f.Name), string(f.Data))
		}
	}
	r, err := spec.Load(spec.Options{Root: ws, Host: spec.Host{OS: "linux", Arch: "amd64"}, Backends: drivers.Linked})
	if err != nil {
		t.Fatalf("loading desired state: %v", err)
	}
	r.WorkspaceID = goldenWorkspaceID
	d := plan.DesiredFrom(r)
	layers, err := resolveLayers(context.Background(), r, func(string) bool { return true }, nil,
		LayerEnv{Compose: composefile.LoadProject})
	if err != nil {
		t.Fatalf("layers: %v", err)
	}
	for name, l := range layers {
		sb := d.Sandboxes[name]
		sb.Layers = l
		d.Sandboxes[name] = sb
	}

	rec := state.New(ws, goldenWorkspaceID)
	if data := testutil.File(ar, "recorded.json"); data != "" {
		if err := json.Unmarshal(render(t, data, d), &rec.Sandboxes); err != nil {
			t.Fatalf("recorded.json: %v", err)
		}
	}
	now, err := time.Parse(time.RFC3339, strings.TrimSpace(testutil.File(ar, "now")))
	if err != nil {
		t.Fatalf("now: %v", err)
	}
	obs := observeArchive(t, ar, d, rec)
	obs.Guests, obs.EnvOK = guestsFromArchive(t, ar, d), map[string]bool{}
	for _, sb := range d.Sandboxes {
		if sb.Layers != nil {
			for file := range sb.Layers.Env {
				obs.EnvOK[file] = envUpToDate(sb.Layers, file)
			}
		}
	}
	if strings.TrimSpace(testutil.File(ar, "mode")) == "pools" {
		return plan.ComputePools(d, obs, now)
	}
	return plan.Compute(d, rec, obs, now)
}

// guestsFromArchive reads guests.json (a template, see render).
func guestsFromArchive(t *testing.T, ar *txtar.Archive, d plan.Desired) map[string]*plan.GuestObserved {
	text := testutil.File(ar, "guests.json")
	if text == "" {
		return nil
	}
	out := map[string]*plan.GuestObserved{}
	data := render(t, text, d)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("guests.json: %v\n%s", err, data)
	}
	return out
}

// render expands {{bundle SANDBOX KIND}} and {{hash SANDBOX KIND SERVICE}}
// to the hashes the desired projects have (KIND: compose or services).
func render(t *testing.T, text string, d plan.Desired) []byte {
	project := func(sandbox, kind string) *guest.Project {
		if l := d.Sandboxes[sandbox].Layers; l != nil {
			if kind == "services" {
				return l.Services
			}
			return l.Compose
		}
		t.Fatalf("no layers for %s", sandbox)
		return nil
	}
	tmpl, err := template.New("archive").Funcs(template.FuncMap{
		"bundle": func(sandbox, kind string) string { return project(sandbox, kind).Bundle },
		"hash":   func(sandbox, kind, svc string) string { return project(sandbox, kind).Services[svc] },
		"shape": func(sandbox string) string {
			ds := d.Sandboxes[sandbox]
			return drivers.Shape(ds.Driver, ds.VM)
		},
		"pool": func(name string) string { return d.Pools[name].Shape },
	}).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
func observeArchive(t *testing.T, ar *txtar.Archive, d plan.Desired, rec *state.File) plan.Observed {
	raw := map[string]json.RawMessage{}
	if data := testutil.File(ar, "observed.json"); data != "" {
		if err := json.Unmarshal(render(t, data, d), &raw); err != nil {
			t.Fatalf("observed.json: %v", err)
		}
	}
	inFlight := map[string]bool{}
	recorded := map[string]string{}
	for name, sb := range rec.Sandboxes {
		recorded[name] = sb.Driver
	}
	names := plan.DriversInUse(d, recorded)
	for drv := range raw {
		names = append(names, drv)
	}
	obs := Observe(context.Background(), goldenWorkspaceID, names, func(name string) (Lister, error) {
		var reason string
		if json.Unmarshal(raw[name], &reason) == nil {
			return nil, errors.New(strings.TrimPrefix(reason, "unavailable: "))
		}
		var list []drivers.Instance
		var flags []struct {
			Name     string `json:"name"`
			InFlight bool   `json:"in_flight"`
		}
		if len(raw[name]) > 0 {
			if err := json.Unmarshal(raw[name], &list); err != nil {
				t.Fatalf("observed.json %s: %v", name, err)
			}
			json.Unmarshal(raw[name], &flags)
		}
		for _, f := range flags {
			inFlight[f.Name] = f.InFlight
		}
		return staticLister(list), nil
	})
	for i, s := range obs.Spares {
		obs.Spares[i].InFlight = inFlight[s.Name]
	}
	return obs
}

// staticLister replays a list; like the sim, it keeps labels.
type staticLister []drivers.Instance

func (s staticLister) List(context.Context) ([]drivers.Instance, error) { return s, nil }
func (staticLister) MarkSpare(context.Context, string, drivers.SpareLabel) error {
	panic("the planner wrote a label")
}
func (staticLister) Claim(context.Context, string, drivers.Owner) error { panic("the planner claimed") }
