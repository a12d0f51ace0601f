package leases

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

var classifyNow = utc("2026-03-26T12:00:00Z")

// classifyRows are one v1 database holding every case, as v1 would have
// written it.
var classifyRows = []v1test.Row{
	// import
	{ID: "inst_00000001", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T12:30:00Z", Name: "agent-00000001", Ready: 1, Docker: "docker"},
	{ID: "inst_00000002", Backend: "hyperv", Root: "/ws/b", Status: "creating", Created: "2026-03-26T11:59:00Z",
		Expires: "2026-03-26T12:29:00.5+00:00", Name: "agent-00000002"},
	// leaked
	{ID: "inst_00000003", Backend: "lima", Root: "/ws/a", Status: "expired", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T08:30:00Z", Name: "agent-00000003"},
	{ID: "inst_00000004", Backend: "lima", Root: "/ws/a", Status: "destroyed", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000004"},
	{ID: "inst_00000005", Backend: "lima", Root: "/ws/a", Status: "error", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000005"},
	{ID: "inst_00000006", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T12:00:00Z", Name: "agent-00000006"}, // ran out exactly now
	// gone
	{ID: "inst_00000007", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000007"},
	{ID: "inst_00000008", Backend: "lima", Root: "/ws/a", Status: "expired", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T08:30:00Z", Name: "agent-00000008"},
	// skip
	{ID: "inst_00000009", Backend: "lima", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000009"}, // no workspace
	{ID: "inst_0000000a", Backend: "lima", Root: "/gone/ws", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-0000000a"}, // workspace not here
	{ID: "inst_0000000b", Backend: "docker", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-0000000b"}, // backend sbf lacks
	{ID: "inst_0000000c", Backend: "lima", Root: "/ws/a", Status: "paused", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-0000000c"}, // status v1 never wrote
	{ID: "inst_0000000d", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "later", Name: "agent-0000000d"}, // expiry unreadable
	{ID: "inst_0000000e", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "sbf-0123abcd-web"}, // an sbf instance
	{ID: "inst_0000000f", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-shared"}, // two leases, one VM:
	{ID: "inst_00000010", Backend: "lima", Root: "/ws/a", Status: "expired", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T08:30:00Z", Name: "agent-shared"}, // never adopt what is deleted
	{ID: "inst_00000014", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000014"}, // imported before
	{ID: "inst_00000015", Backend: "lima", Root: "/ws/a", Status: "expired", Created: "2026-03-26T08:00:00Z",
		Expires: "2026-03-26T08:30:00Z", Name: "agent-00000015"}, // imported, then v1's row ran out
	{ID: "inst_00000011", Backend: "lima", Root: "ws/rel", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000011"}, // relative root
	{ID: "bad id!", Backend: "lima", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000012"}, // not a sandbox name
	// unseen: vz lists nothing it did not name
	{ID: "inst_00000013", Backend: "vzv1", Root: "/ws/a", Status: "running", Created: "2026-03-26T11:00:00Z",
		Expires: "2026-03-26T13:00:00Z", Name: "agent-00000013"},
}

var classifyInventory = Inventory{
	Listed: map[string]map[string]bool{
		"lima": {"agent-00000001": true, "agent-00000003": true, "agent-00000004": true, "agent-00000005": true,
			"agent-00000006": true, "agent-00000009": true, "agent-0000000a": true, "agent-0000000c": true,
			"agent-0000000d": true, "sbf-0123abcd-web": true, "agent-shared": true, "agent-00000011": true,
			"agent-00000012": true, "agent-unrelated": true, "agent-00000014": true, "agent-00000015": true},
		"hyperv": {"agent-00000002": true},
	},
	Unlisted: map[string]string{"vz": "it lists only instances sbf named"},
	Held: map[string]map[string]string{"lima": {"agent-00000014": "sandbox inst_00000014 of /ws/a",
		"agent-00000015": "sandbox inst_00000015 of /ws/a", "agent-00000007": "sandbox x of /ws/x"}},
}

func classifyAll(t *testing.T, schema []string) Report {
	t.Helper()
	path := v1test.Write(t, t.TempDir(), schema, classifyRows...)
	db, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return Classify(db.Leases, classifyInventory, Options{
		Now:       classifyNow,
		Drivers:   map[string]string{"lima": "lima", "hyperv": "hyperv", "vzv1": "vz"},
		DirExists: func(p string) bool { return p == "/ws/a" || p == "/ws/b" },
	})
}

func TestClassifyV1(t *testing.T) {
	for _, schema := range [][]string{{v1test.Current}, {v1test.Legacy}} {
		rep := classifyAll(t, schema)
		want := []struct {
			id     string
			class  Class
			driver string
			reason string // a part of it
		}{
			{"inst_00000001", Import, "lima",
				"active until 2026-03-26T12:30:00Z: VM agent-00000001 becomes sandbox inst_00000001 of /ws/a"},
			{"inst_00000002", Import, "hyperv", "(v1 had not finished creating it)"},
			{"inst_00000003", Leaked, "lima", "lazy expiry"},
			{"inst_00000004", Leaked, "lima", "v1 destroyed the lease but VM agent-00000004 still exists"},
			{"inst_00000005", Leaked, "lima", "status error"},
			{"inst_00000006", Leaked, "lima", "ran out at 2026-03-26T12:00:00Z"},
			{"inst_00000013", Unseen, "vz", "the vz driver cannot say (it lists only instances sbf named)"},
			{"bad id!", Skip, "lima", "cannot be an sbf sandbox name"},
			{"inst_00000009", Skip, "lima", "no workspace_root"},
			{"inst_0000000a", Skip, "lima", "/gone/ws is not a folder on this host"},
			{"inst_0000000b", Skip, "", `v1 backend "docker" has no sbf driver`},
			{"inst_0000000c", Skip, "lima", `unknown v1 status "paused"`},
			{"inst_0000000d", Skip, "lima", `expiry cannot be read (expires_at: "later" is not an ISO 8601 time)`},
			{"inst_0000000e", Skip, "lima", "sbf instance name"},
			{"inst_0000000f", Skip, "lima", "VM agent-shared is named by 2 v1 leases (inst_0000000f, inst_00000010)"},
			{"inst_00000010", Skip, "lima", "VM agent-shared is named by 2 v1 leases"},
			{"inst_00000011", Skip, "lima", `"ws/rel" is not an absolute path`},
			{"inst_00000014", Skip, "lima", "sbf already keeps VM agent-00000014 (sandbox inst_00000014 of /ws/a)"},
			{"inst_00000015", Skip, "lima", "sbf already keeps VM agent-00000015"},
			{"inst_00000007", Gone, "lima", "VM agent-00000007 no longer exists in lima"},
			{"inst_00000008", Gone, "lima", "no longer exists"},
		}
		if len(rep.Entries) != len(want) {
			t.Fatalf("%d entries, want %d: %+v", len(rep.Entries), len(want), rep.Entries)
		}
		for i, w := range want {
			e := rep.Entries[i]
			if e.InstanceID != w.id || e.Class != w.class || e.Driver != w.driver ||
				!strings.Contains(e.Reason, w.reason) {
				t.Errorf("entry %d = %s %s %s %q\n want %s %s %s …%q…", i, e.InstanceID, e.Class, e.Driver,
					e.Reason, w.id, w.class, w.driver, w.reason)
			}
		}
		wantCounts := map[Class]int{Import: 2, Leaked: 4, Unseen: 1, Skip: 12, Gone: 2}
		for c, n := range wantCounts {
			if rep.Counts[c] != n {
				t.Errorf("count %s = %d, want %d", c, rep.Counts[c], n)
			}
		}
	}
}

// The report is the same whatever order the leases come in, and reads
// nothing but its arguments.
func TestClassifyV1Deterministic(t *testing.T) {
	rep := classifyAll(t, []string{v1test.Current})
	leases := make([]Lease, len(rep.Entries))
	for i, e := range rep.Entries {
		leases[len(leases)-1-i] = e.Lease
	}
	again := Classify(leases, classifyInventory, Options{
		Now:       classifyNow,
		Drivers:   map[string]string{"lima": "lima", "hyperv": "hyperv", "vzv1": "vz"},
		DirExists: func(p string) bool { return p == "/ws/a" || p == "/ws/b" },
	})
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("order changed the report:\n%s\n%s", a, b)
	}
}

// A backend the inventory lacks is unseen, not gone; no DirExists takes
// every root as there. (Which sbf driver runs v1's backend is the
// registrations' to say: drivers.V1Backends.)
func TestClassifyV1Defaults(t *testing.T) {
	v1 := map[string]string{"hyperv": "hyperv"}
	l := Lease{InstanceID: "inst_1", Backend: "hyperv", BackendInstance: "agent-1", WorkspaceRoot: "/nowhere",
		Status: "running", ExpiresAt: classifyNow.Add(1)}
	rep := Classify([]Lease{l}, Inventory{}, Options{Now: classifyNow, Drivers: v1})
	if e := rep.Entries[0]; e.Class != Unseen || e.Driver != "hyperv" ||
		!strings.Contains(e.Reason, "it was not listed") {
		t.Errorf("entry = %+v", e)
	}
	rep = Classify([]Lease{l}, Inventory{Listed: map[string]map[string]bool{"hyperv": {"agent-1": true}}},
		Options{Now: classifyNow, Drivers: v1})
	if e := rep.Entries[0]; e.Class != Import {
		t.Errorf("nil DirExists: entry = %+v", e)
	}
	if rep.Counts[Gone] != 0 || len(rep.Counts) != 5 {
		t.Errorf("counts = %v", rep.Counts)
	}
}
