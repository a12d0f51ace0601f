package guest

import (
	"context"
	"strings"
	"testing"
)

func TestObserveRecordedTrustsOnlyAnUnchangedGuest(t *testing.T) {
	api := &Project{Name: "sbf-api", Bundle: "b1"}
	svc := &Project{Name: "sbf-api-services", Bundle: "s1"}
	recorded := map[string]map[string]string{
		"sbf-api":          {"web": "h1", "idle": "h2"},
		"sbf-api-services": {"mysql": "m1"},
	}
	const clean = "@@bundle sbf-api b1\n@@bundle sbf-api-services s1\n@@ps\n" +
		"sbf-api web h1 running\nsbf-api idle h2 running\nsbf-api-services mysql m1 running\nother x h9 exited\n"
	look := func(t *testing.T, stdout string, code int, projects ...*Project) (map[string]ProjectState, bool, string) {
		t.Helper()
		r := &scripted{replies: []reply{{match: "@@ps", res: out(stdout, code)}}}
		states, ok := ObserveRecorded(context.Background(), r, "sudo -n docker", projects, recorded)
		if len(r.ran) > 1 || len(r.ran) == 1 && strings.Contains(r.ran[0], "compose ") {
			t.Errorf("ran %q: one command, no compose", r.ran)
		}
		return states, ok, strings.Join(r.ran, "\n")
	}
	// The guest's own stacks, whatever their labels hold, are not looked at.
	const others = "mine web h7 running\nmine  exited\nmy stack with spaces x y z\n"
	states, ok, ran := look(t, clean+others, 0, api, svc)
	if !ok || len(states) != 2 || !strings.Contains(ran, "sudo -n docker ps -a") ||
		!strings.Contains(ran, "'.sbf/sbf-api/.sbf-bundle'") {
		t.Fatalf("an unchanged guest: %v %v\n%s", states, ok, ran)
	}
	for _, p := range []*Project{api, svc} {
		if d := p.Drift(states[p.Name], nil); len(d) != 0 {
			t.Errorf("%s: what the cheap look returns must be converged, drifts %v", p.Name, d)
		}
	}
	changed := map[string]string{
		"bundle changed":          strings.Replace(clean, "sbf-api b1", "sbf-api b2", 1),
		"no bundle":               strings.Replace(clean, "@@bundle sbf-api b1\n", "@@bundle sbf-api\n", 1),
		"container recreated":     strings.Replace(clean, "web h1", "web h3", 1),
		"container stopped":       strings.Replace(clean, "h2 running", "h2 exited", 1),
		"container gone":          strings.Replace(clean, "sbf-api idle h2 running\n", "", 1),
		"an orphan":               clean + "sbf-api extra h4 running\n",
		"listed twice":            clean + "sbf-api web h1 running\n",
		"docker failed":           strings.Replace(clean, "@@ps\n", "@@ps\n@@error\n", 1),
		"no listing":              "@@bundle sbf-api b1\n@@bundle sbf-api-services s1\n",
		"a line of another shape": clean + "sbf-api web h1\n",
	}
	for why, stdout := range changed {
		if _, ok, _ := look(t, stdout, 0, api, svc); ok {
			t.Errorf("%s: trusted", why)
		}
	}
	if _, ok, _ := look(t, clean, 1, api, svc); ok {
		t.Error("a failed command: trusted")
	}
	if _, ok, ran := look(t, clean, 0, &Project{Name: "sbf-new", Bundle: "n1"}); ok || ran != "" {
		t.Errorf("a project never brought up: trusted %v, ran %q", ok, ran)
	}
	r := &scripted{}
	if _, ok := ObserveRecorded(context.Background(), r, "", []*Project{api}, recorded); ok || len(r.ran) != 0 {
		t.Errorf("no docker command recorded: trusted %v, ran %q", ok, r.ran)
	}
}
