package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sandboxforge/sbf"

// layer ranks a package: a package imports only packages of its own rank
// or below.
func layer(pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	switch {
	case under(rel, "internal"):
		return 0
	case under(rel, "drivers/guest"):
		return 2 // it renders the spec's [infra] and [compose] into guest projects
	case under(rel, "drivers"), under(rel, "images"), under(rel, "egress"), rel == "state/statefile":
		return 1
	case under(rel, "spec"), rel == "state", under(rel, "reconcile/plan"):
		return 2
	case under(rel, "reconcile"), under(rel, "sandbox"), under(rel, "v1import"):
		return 3
	case under(rel, "mcpserver"):
		return 4
	}
	return 5 // cli, cmd/…, test suites (escape, e2e)
}

func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// forbidden are edges the ranks allow but the design does not.
var forbidden = []struct {
	bad func(from, to string) bool
	why string
}{
	{func(f, t string) bool { return under(f, "spec") && under(t, "drivers") },
		"a spec sees backends through spec.Backends, which the drivers registry implements, never linking them"},
	{func(f, t string) bool { return under(f, "reconcile/plan") && engine(t) },
		"the planner is pure: it never reaches the engine"},
	{func(f, t string) bool { return under(f, "sandbox") && engine(t) },
		"the data plane acts on what the engine found; it never decides"},
	{func(f, t string) bool { return engine(f) && (under(t, "sandbox/docker") || under(t, "v1import")) },
		"the engine knows no Docker tool and nothing of v1"},
	{func(f, t string) bool {
		return under(f, "reconcile/loop") && under(t, "reconcile") && !under(t, "reconcile/loop")
	},
		"the loop is a controller over a Reconciler: it never sees the engine or its concepts"},
	{func(f, t string) bool { return under(f, "reconcile/admission") && under(t, "reconcile/executor") },
		"admission decides who may act and how many; it never carries a plan out"},
	{func(f, t string) bool { return stacked(f) >= 0 && stacked(t) > stacked(f) },
		"the engine's concepts stack (plan < admission < pools < executor < snapshots): none uses one above it"},
	{func(f, t string) bool { return concept(f) && t == "reconcile" },
		"a concept of the engine never reaches back up to the engine that uses it"},
	{func(f, t string) bool { return under(t, "cmd") }, "nothing imports a command"},
	{func(f, t string) bool {
		return (under(t, "mcpserver") || under(t, "drivers/guest/composefile")) && !under(f, "cli/mcpcmd") &&
			!under(f, "cmd/sbf-server") && !under(f, "mcpserver") && !under(f, "drivers/guest/composefile")
	}, "only sbf-server links the MCP server and compose-go (sbf starts without them)"},
	{func(f, t string) bool {
		return under(f, "drivers") && under(t, "drivers") && backend(f) != "" && backend(f) != "all" &&
			backend(f) != backend(t) && !shared(t)
	}, "a backend never imports another backend"},
}

// stacked ranks the engine's concepts that build on each other: spares
// are made within the host cap (admission), the executor claims and
// retires them under the pool lock (pools), a snapshot holds the sandbox
// lock and acts on what the executor made (-1: not one of them).
func stacked(rel string) int {
	for i, c := range []string{"reconcile/plan", "reconcile/admission", "reconcile/pools", "reconcile/executor",
		"reconcile/snapshots"} {
		if under(rel, c) {
			return i
		}
	}
	return -1
}

// concept is one of the engine's packages below its root (reconcile/loop, …).
func concept(rel string) bool { return strings.HasPrefix(rel, "reconcile/") }

// engine is the engine proper: reconcile without its planner.
func engine(rel string) bool { return under(rel, "reconcile") && !under(rel, "reconcile/plan") }

type listed struct {
	ImportPath string
	Imports    []string
}

func TestPackageLayering(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if why := violation(p.ImportPath, imp); why != "" {
				t.Errorf("%s imports %s: %s", rel(p.ImportPath), rel(imp), why)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("listed only %d packages", seen)
	}
}

func violation(from, to string) string {
	if layer(to) > layer(from) {
		return "a lower layer reaches up (doors → engine/data plane → planner/state → drivers → internal)"
	}
	for _, rule := range forbidden {
		if rule.bad(rel(from), rel(to)) {
			return rule.why
		}
	}
	return ""
}

// backend is the driver package a path belongs to (drivers/lima/... → lima).
func backend(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) < 2 || shared(rel) {
		return ""
	}
	return parts[1]
}

// shared are driver-layer packages every backend may use.
func shared(rel string) bool {
	for _, s := range []string{"drivers/sshexec", "drivers/cloudinit", "drivers/guest", "drivers/drivertest"} {
		if under(rel, s) {
			return true
		}
	}
	return rel == "drivers"
}

func rel(pkg string) string { return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/") }

// The sbf binary starts in a couple of milliseconds because it links
// neither the MCP server nor compose-go, whose JSON Schemas compile when a
// process starts: sbf-server does their work.
func TestSbfLinksNeitherTheMCPServerNorComposeGo(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", module+"/cmd/sbf")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, heavy := range []string{module + "/mcpserver", "github.com/mark3labs/mcp-go/server",
		"github.com/compose-spec/compose-go/v2/loader", "github.com/santhosh-tekuri/jsonschema/v6",
		"github.com/distribution/reference"} {
		for _, dep := range strings.Fields(string(out)) {
			if dep == heavy {
				t.Errorf("cmd/sbf links %s", heavy)
			}
		}
	}
}

// The rules can fail: each forbidden edge is reported.
func TestViolationsAreReported(t *testing.T) {
	for _, c := range [][2]string{{"spec", "drivers"}, {"reconcile/plan", "reconcile"}, {"sandbox", "reconcile"},
		{"internal/policy", "spec"}, {"drivers/lima", "drivers/sim"}, {"reconcile", "mcpserver"},
		{"mcpserver", "cmd/sbf"}, {"state", "reconcile"}, {"reconcile", "sandbox/docker"}, {"cli", "mcpserver"},
		{"reconcile", "drivers/guest/composefile"}, {"reconcile/loop", "reconcile"}, {"reconcile/loop", "reconcile/plan"},
		{"reconcile/admission", "reconcile/executor"}, {"reconcile/executor", "reconcile"},
		{"reconcile/plan", "reconcile"}, {"reconcile/snapshots", "reconcile"},
		{"reconcile/executor", "reconcile/snapshots"}, {"reconcile/admission", "reconcile/snapshots"},
		{"reconcile/pools", "reconcile/executor"}, {"reconcile/admission", "reconcile/pools"},
		{"reconcile/pools", "reconcile"}} {
		if violation(module+"/"+c[0], module+"/"+c[1]) == "" {
			t.Errorf("%s → %s was allowed", c[0], c[1])
		}
	}
	for _, c := range [][2]string{{"reconcile", "sandbox"}, {"sandbox/docker", "sandbox"}, {"drivers/lima",
		"drivers/sshexec"},
		{"mcpserver", "reconcile"}, {"cli/mcpcmd", "mcpserver"}, {"reconcile/plan", "spec"},
		{"internal/policy", "internal/hostpath"}, {"cmd/sbf-server", "drivers/guest/composefile"},
		{"reconcile", "reconcile/loop"}, {"reconcile/loop", "spec"}, {"reconcile/executor", "reconcile/admission"},
		{"reconcile/snapshots", "reconcile/admission"}, {"reconcile", "reconcile/snapshots"},
		{"reconcile/executor", "reconcile/pools"}, {"reconcile/pools", "reconcile/admission"}} {
		if why := violation(module+"/"+c[0], module+"/"+c[1]); why != "" {
			t.Errorf("%s → %s refused: %s", c[0], c[1], why)
		}
	}
}
