package snapshots

import (
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/state/statefile"
)

func workspace(declared ...string) *spec.Resolved {
	r := &spec.Resolved{Config: spec.Config{Sandboxes: map[string]spec.Sandbox{}}}
	for _, name := range declared {
		r.Config.Sandboxes[name] = spec.Sandbox{}
	}
	return r
}

func TestACloneTakesTheFirstNumberNoSandboxHas(t *testing.T) {
	r := workspace("api", "api-clone-1")
	rec := &state.File{Sandboxes: map[string]*state.Sandbox{"api-clone-2": {Phase: statefile.Destroyed}}}
	if got := freeCloneName(r, rec, "api"); got != "api-clone-3" {
		t.Errorf("free name %q", got)
	}
	long := strings.Repeat("a", 38) + "-b"
	got := freeCloneName(r, rec, long)
	if len(got) > 40 || !spec.ValidSandboxName(got) || got != strings.Repeat("a", 32)+"-clone-1" {
		t.Errorf("free name of a long source: %q", got)
	}
}

func TestACloneNameIsRefusedWhenTakenOrInvalid(t *testing.T) {
	r := workspace("api")
	rec := &state.File{Sandboxes: map[string]*state.Sandbox{
		"old": {Phase: statefile.Destroyed}, "live": {Phase: statefile.Running}}}
	for name, want := range map[string]string{"api": coded.ConfigInvalid, "live": coded.ConfigInvalid,
		"../x": coded.ConfigInvalid, "old": "", "new": ""} {
		if err := NameFree(r, rec, name); (err == nil) != (want == "") || err != nil && coded.Of(err, "").Code != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestACloneKeepsItsSourcesShapeButNotItsHostPorts(t *testing.T) {
	sb := spec.Sandbox{Ports: []string{"18080:80"}, Services: []string{"redis"},
		Network: spec.Network{Egress: "allowlist", Allow: []string{"example.com"}}}
	sb.CPUs, sb.Driver = 3, "sim"
	keys := CloneKeys(sb)
	if _, ok := keys["ports"]; ok {
		t.Errorf("the clone takes its source's host ports: %v", keys)
	}
	net, _ := keys["network"].(map[string]any)
	if keys["cpus"] != int64(3) || keys["driver"] != "sim" || net["egress"] != "allowlist" ||
		len(keys["services"].([]any)) != 1 {
		t.Errorf("keys %v", keys)
	}
}

// A clone is held to its source's network policy even where the source's
// allow list is empty (an allowlist that lets nothing through): the empty
// list is declared, never left to [network]'s. Empty keys are left out.
func TestACloneKeepsAnEmptyAllowList(t *testing.T) {
	sb := spec.Sandbox{Network: spec.Network{Egress: "allowlist", Allow: []string{}}}
	keys := CloneKeys(sb)
	net, _ := keys["network"].(map[string]any)
	if allow, ok := net["allow"].([]any); !ok || len(allow) != 0 || net["egress"] != "allowlist" {
		t.Errorf("network %#v", keys["network"])
	}
	for _, k := range []string{"arch", "ttl", "mounts", "image", "services"} {
		if _, ok := keys[k]; ok {
			t.Errorf("the empty key %s is declared: %v", k, keys)
		}
	}
}
