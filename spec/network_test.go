package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const lockedDown = `[network]
egress = "allowlist"
allow = ["pypi.org", "*.githubusercontent.com"]
[sandboxes.api]
[sandboxes.db]
network.egress = "deny"
`

func TestSandboxesStartFromTheWorkspaceNetwork(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: lockedDown}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	api, db := r.Config.Sandboxes["api"].Network, r.Config.Sandboxes["db"].Network
	if api.Egress != "allowlist" || !slices.Equal(api.Allow, []string{"pypi.org", "*.githubusercontent.com"}) {
		t.Errorf("api network = %+v, want [network]'s", api)
	}
	if db.Egress != "deny" || !db.Restricted() {
		t.Errorf("db network = %+v, want its own deny", db)
	}
	if d, _ := load(t, nil, nil); d.Config.Network.Egress != "allow" || d.Config.Network.Restricted() {
		t.Errorf("default network = %+v, want allow", d.Config.Network)
	}
}

func TestBadAllowEntriesAreReportedWhereTheyAre(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "[network]\negress = \"allowlist\"\n" +
		"allow = [\"pypi.org\", \"https://x.org\", \"*.com\"]\n[sandboxes.api]\nnetwork.allow = [\"a.org:0\"]\n" +
		"[sandboxes.web]\nnetwork.egress = \"open\"\n"}, nil)
	want := map[string]bool{"network.allow[1]": false, "network.allow[2]": false,
		"sandboxes.api.network.allow[0]": false, "sandboxes.web.network.egress": false}
	for _, e := range errs {
		if _, ok := want[e.Key]; ok && e.Line > 0 {
			want[e.Key] = true
		}
	}
	for key, found := range want {
		if !found {
			t.Errorf("no positioned error for %s; got %v", key, errs)
		}
	}
}

func TestARequestMayOnlyNarrowTheNetwork(t *testing.T) {
	for overrides, problem := range map[string]string{
		`{"network": {"egress": "allow"}}`:                              "wider than the workspace's",
		`{"sandboxes": {"db": {"network": {"egress": "allowlist"}}}}`:   "wider than the workspace's",
		`{"network": {"allow": ["pypi.org", "evil.example"]}}`:          `"evil.example" is not in`,
		`{"sandboxes": {"api": {"network": {"allow": ["x.example"]}}}}`: `"x.example" is not in`,
		`{"sandboxes": {"api": {"network": {"egress": "deny"}}}}`:       "",
		`{"network": {"allow": ["pypi.org"]}}`:                          "",
		`{"vm": {"cpus": 2}}`:                                           "",
	} {
		req, err := JSONOverrides(json.RawMessage(overrides))
		if err != nil {
			t.Fatal(err)
		}
		_, errs := load(t, map[string]string{FileName: lockedDown}, req)
		got := errs.Error()
		if errs == nil {
			got = ""
		}
		if problem == "" && got != "" || problem != "" && !strings.Contains(got, problem) {
			t.Errorf("%s: errors %q, want %q", overrides, got, problem)
		}
	}
}
