package spec

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// loadUnder resolves a workspace holding files under a config home holding
// global, with the operator's ceilings c and a request.
func loadUnder(t *testing.T, global string, files map[string]string, c policy.Ceilings, req *Request) (*Resolved,
	error) {
	t.Helper()
	home, ws := t.TempDir(), t.TempDir()
	if global != "" {
		testutil.WriteFile(t, filepath.Join(home, "sandboxforge/config.toml"), global)
	}
	for name, data := range files {
		testutil.WriteFile(t, filepath.Join(ws, name), data)
	}
	return Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux", Arch: "amd64"}, ConfigHome: home, Ceilings: c,
		Request: req})
}

func ceilingRow(t *testing.T, r *Resolved, key string) Ceiling {
	t.Helper()
	row, ok := r.CeilingOf(key)
	if !ok {
		t.Fatalf("no ceiling %s in %+v", key, r.Ceilings)
	}
	return row
}

const greedy = "[lease]\nmax_instances = 500\nmax_ttl = \"2000h\"\nmax_lifetime = \"3000h\"\n" +
	"default_ttl = \"1000h\"\n[vm]\nttl = \"1500h\"\n[sandboxes.a]\nttl = \"1999h\"\n[sandboxes.b]\n"

// The attack 8: a workspace saying 500 instances and 2000h under
// an operator who allowed 1 and 1h gets 1 and 1h, each lowered value
// warned about at its position, every lease length with them.
func TestWorkspaceValuesAboveTheCeilingsAreLowered(t *testing.T) {
	c := policy.Ceilings{MaxInstances: policy.Ceiling[int]{Value: 1, Source: "global config X [policy] max_instances"},
		MaxTTL: policy.Ceiling[time.Duration]{Value: time.Hour, Source: "global config X [policy] max_ttl"}}
	r, err := loadUnder(t, "", map[string]string{FileName: greedy}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := r.Config.Lease
	if l.MaxInstances != 1 || l.MaxTTL.Std() != time.Hour || l.DefaultTTL.Std() != time.Hour ||
		l.MaxLifetime.Std() != 3000*time.Hour {
		t.Errorf("lease = %+v", l)
	}
	if r.Config.VM.TTL.Std() != time.Hour || r.Config.Sandboxes["a"].TTL.Std() != time.Hour ||
		r.Config.Sandboxes["b"].TTL.Std() != time.Hour {
		t.Errorf("ttls = %s %s %s", r.Config.VM.TTL, r.Config.Sandboxes["a"].TTL, r.Config.Sandboxes["b"].TTL)
	}
	warned := r.Warnings.Error()
	for _, want := range []string{":2:17: lease.max_instances: 500 is above the operator's ceiling 1 " +
		"(global config X [policy] max_instances): 1 applies", ":3:11: lease.max_ttl: 2000h is above",
		"lease.default_ttl: 1000h is longer than lease.max_ttl (1h", "vm.ttl: 1500h", "sandboxes.a.ttl: 1999h"} {
		if !strings.Contains(warned, want) {
			t.Errorf("warnings lack %q:\n%s", want, warned)
		}
	}
	if row := ceilingRow(t, r, "max_ttl"); row.Ceiling != Duration(time.Hour) || row.Value != Duration(time.Hour) ||
		row.Source != "global config X [policy] max_ttl" || row.ValueFrom != FromCeiling {
		t.Errorf("max_ttl row = %+v", row)
	}
	if row := ceilingRow(t, r, "max_lifetime"); row.Ceiling != nil || row.Source != SourceNoCeiling ||
		!strings.HasSuffix(row.ValueFrom, FileName) {
		t.Errorf("max_lifetime row = %+v", row)
	}
	if row := ceilingRow(t, r, "max_output_bytes"); row.Value != policy.DefaultMaxOutputBytes ||
		row.Source != policy.SourceDefault {
		t.Errorf("max_output_bytes row = %+v", row)
	}
}

// A value the global config's [lease] sets is the operator's: a ceiling
// too, and the value where no workspace layer sets one. A request or the
// managed overrides may lower it, never raise it; [policy] and [lease]
// together: the smaller wins.
func TestGlobalLeaseValuesAreCeilings(t *testing.T) {
	global := "[lease]\nmax_instances = 2\nmax_ttl = \"3h\"\nmax_lifetime = \"5h\"\n"
	r, err := loadUnder(t, global, nil, policy.Ceilings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Config.Lease; l.MaxInstances != 2 || l.MaxTTL.Std() != 3*time.Hour || l.MaxLifetime.Std() != 5*time.Hour {
		t.Errorf("lease = %+v", l)
	}
	if row := ceilingRow(t, r, "max_instances"); !strings.HasSuffix(row.Source, "config.toml [lease] max_instances") ||
		row.Value != 2 {
		t.Errorf("row = %+v", row)
	}
	req, _ := JSONOverrides(json.RawMessage(`{"lease": {"max_instances": 9, "max_ttl": "1h"}}`))
	r, err = loadUnder(t, global, map[string]string{FileName: "[lease]\nmax_instances = 1\n"}, policy.Ceilings{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Config.Lease; l.MaxInstances != 2 || l.MaxTTL.Std() != time.Hour {
		t.Errorf("request 9 instances and 1h: lease = %+v, want 2 and 1h", l)
	}
	c := policy.Ceilings{MaxInstances: policy.Ceiling[int]{Value: 1, Source: "env MAX_INSTANCES"}}
	r, err = loadUnder(t, global, nil, c, nil)
	if err != nil || r.Config.Lease.MaxInstances != 1 ||
		ceilingRow(t, r, "max_instances").Source != "env MAX_INSTANCES" {
		t.Errorf("policy 1 under [lease] 2: %+v %v", r.Ceilings, err)
	}
}

// A ceiling above the defaults is the value where the workspace says
// nothing, and lengths it makes inconsistent are lowered, not errors. A
// workspace whose own lengths contradict its own limits is still wrong.
func TestCeilingsNeverMakeAWorkspaceInvalid(t *testing.T) {
	c := policy.Ceilings{MaxTTL: policy.Ceiling[time.Duration]{Value: 30 * 24 * time.Hour, Source: "p"},
		MaxLifetime: policy.Ceiling[time.Duration]{Value: 10 * time.Minute, Source: "q"}}
	r, err := loadUnder(t, "", nil, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Config.Lease; l.MaxTTL.Std() != 10*time.Minute || l.DefaultTTL.Std() != 10*time.Minute {
		t.Errorf("lease = %+v", l)
	}
	if row := ceilingRow(t, r, "max_ttl"); row.Value != Duration(10*time.Minute) {
		t.Errorf("max_ttl row = %+v", row)
	}
	_, err = loadUnder(t, "", map[string]string{FileName: "[lease]\nmax_ttl = \"1h\"\n[vm]\nttl = \"2h\"\n"},
		policy.Ceilings{MaxInstances: policy.Ceiling[int]{Value: 1, Source: "p"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "vm.ttl: 2h is longer than lease.max_ttl (1h)") {
		t.Errorf("a ttl past the workspace's own max_ttl: %v", err)
	}
}

// Without ceilings nothing changes: the workspace decides its lease
// limits, and the output and copy ceilings are the server's defaults.
func TestNoCeilingsLeaveTheWorkspaceAlone(t *testing.T) {
	r, err := loadUnder(t, "", map[string]string{FileName: greedy}, policy.Ceilings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Config.Lease; l.MaxInstances != 500 || l.MaxTTL.Std() != 2000*time.Hour || len(r.Warnings) != 0 {
		t.Errorf("lease = %+v, warnings %v", l, r.Warnings)
	}
	if row := ceilingRow(t, r, "max_copy_bytes"); row.Value != policy.DefaultMaxCopyBytes {
		t.Errorf("max_copy_bytes row = %+v", row)
	}
}
