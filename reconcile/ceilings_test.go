package reconcile

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
)

const greedySpec = "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 500\nmax_ttl = \"2000h\"\n" +
	"max_lifetime = \"3000h\"\n"

var tightCeilings = policy.Ceilings{
	MaxInstances: policy.Ceiling[int]{Value: 1, Source: "global config C [policy] max_instances"},
	MaxTTL:       policy.Ceiling[time.Duration]{Value: time.Hour, Source: "global config C [policy] max_ttl"},
}

// The attack 8 at the engine: a workspace saying 500 instances
// and 2000h under an operator ceiling of 1 and 1h admits one instance on
// the host, whichever workspace asks for the next, and refuses leases
// and extensions past 1h with v1's TTL_INVALID, naming the ceiling.
func TestTheOperatorsCeilingsBindEveryWorkspace(t *testing.T) {
	h := newHarness(t, greedySpec)
	h.eng.Policy.Ceilings = tightCeilings
	if _, err := h.up("a"); err != nil {
		t.Fatal(err)
	}
	_, err := h.up("b")
	if e := coded.Of(err, coded.Unknown); e.Code != coded.InstanceLimit || e.Details["max_instances"] != 1 ||
		e.Details["max_instances_source"] != "global config C [policy] max_instances" {
		t.Errorf("a second instance: %v %v", err, e.Details)
	}
	other := newHarness(t, greedySpec)
	other.simDir, other.hostDir, other.eng.HostDir = h.simDir, h.hostDir, h.hostDir
	other.eng.Policy.Ceilings = tightCeilings
	if _, err := other.up("c"); coded.Of(err, coded.Unknown).Code != coded.InstanceLimit {
		t.Errorf("another workspace's instance: %v", err)
	}
	if len(h.world()) != 1 {
		t.Errorf("world = %v, want the one admitted", h.world())
	}
	_, err = h.converge(Options{Targets: []string{"a"}, Intent: Up{Sandboxes: []string{"a"},
		TTL: TTL(2 * time.Hour)}})
	if e := coded.Of(err, coded.Unknown); e.Code != coded.TTLInvalid || e.Details["max_ttl_minutes"] != 60.0 ||
		e.Details["max_ttl_source"] != "global config C [policy] max_ttl" {
		t.Errorf("a 2h lease: %v %v", err, e.Details)
	}
	_, err = h.converge(Options{Intent: Extend{Sandbox: "a", By: 2 * time.Hour}})
	if coded.Of(err, coded.Unknown).Code != coded.TTLInvalid {
		t.Errorf("a 2h extension: %v", err)
	}
	res, err := h.planWith(passOptions())
	if err != nil || res.Resolved.Config.Lease.MaxInstances != 1 || len(res.Resolved.Warnings) != 2 {
		t.Errorf("resolved: %v %+v", err, res.Resolved.Warnings)
	}
	if got := filepath.Base(res.Resolved.Warnings[0].File); got != ".sandboxforge.toml" {
		t.Errorf("warning at %s", got)
	}
}
