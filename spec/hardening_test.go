package spec

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// A request layer is loaded more than once per command (the engine
// resolves before and after an edit); each load must see the values as
// the user typed them.
func TestRequestLayerLoadsTheSameEveryTime(t *testing.T) {
	sets, err := ParseSet([]string{"vm.cpus=2", "vm.ttl=1h", "vm.memory_gib=3", `vm.vm_type="QEMU"`,
		"sandboxes.api.ports=[\"8080:80\"]"})
	if err != nil {
		t.Fatal(err)
	}
	js, err := JSONOverrides(json.RawMessage(`{"vm": {"cpus": 2, "ttl": "1h", "arch": null}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*Request{"--set": sets, "json": js} {
		ws := t.TempDir()
		for i := range 3 {
			r, err := Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux"}, Request: req})
			if err != nil {
				t.Fatalf("%s: load %d: %v", name, i+1, err)
			}
			if r.Config.VM.CPUs != 2 || r.Config.VM.TTL.String() != "1h" {
				t.Fatalf("%s: load %d: vm = %+v", name, i+1, r.Config.VM)
			}
		}
	}
}

func TestOversizedDurationNamesBothValues(t *testing.T) {
	_, errs := load(t,
		map[string]string{FileName: "[lease]\nmax_ttl = \"1000000d\"\nmax_lifetime = \"1000000d\"\n"}, nil)
	if len(errs) != 2 {
		t.Fatalf("errors = %v, want one per oversized key", errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Message, "1000000d") || !strings.Contains(e.Message, MaxDuration.String()) {
			t.Errorf("%s: want both the value and the longest accepted duration", e.Error())
		}
	}
	_, errs = load(t,
		map[string]string{FileName: "[build.prebuilt.staleness_check]\ncheck_age_threshold = 1e300\n"}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, MaxDuration.String()) {
		t.Errorf("hours beyond the limit: %v", errs)
	}
	_, errs = load(t, map[string]string{FileName: "[lease]\nmax_ttl = \"3h\"\n[vm]\nttl = \"4h\"\n"}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "vm.ttl: 4h is longer than lease.max_ttl (3h)") {
		t.Errorf("errors = %v", errs)
	}
}

func TestByteOrderMarkIsAccepted(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "\ufeff[vm]\ncpus = 3\nbogus = 1\n"}, nil)
	if len(errs) != 1 || errs[0].Line != 3 || errs[0].Column != 1 {
		t.Fatalf("errors = %v, want only the unknown key at 3:1", errs)
	}
	r, errs := load(t, map[string]string{FileName: "\ufeff[vm]\ncpus = 3\n"}, nil)
	if errs != nil || r.Config.VM.CPUs != 3 {
		t.Fatalf("errors = %v, vm = %+v", errs, r.Config.VM)
	}
}

func TestParseLimitsNameTheLimit(t *testing.T) {
	deep := "[" + strings.Repeat("a.", 31999) + "a]\n"
	items := "[vm]\nmounts = [" + strings.Repeat(`"x",`, DefaultLimits.MaxArrayLen+1) + "]\n"
	big := "[vm]\nmounts = [\"" + strings.Repeat("x", 4<<20) + "\"]\n"
	nested := "[vm]\nmounts = " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n"
	for name, tc := range map[string]struct{ doc, want string }{
		"32,000-segment key": {deep, "keys are limited to 16 parts"},
		"array length":       {items, "arrays are limited to 10000"},
		"file size":          {big, "files are limited to 1 MiB"},
		"nested arrays":      {nested, "keys are limited to 16 parts"},
	} {
		_, errs := load(t, map[string]string{FileName: tc.doc}, nil)
		if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("%s: errors = %.300v, want one naming %q", name, errs, tc.want)
			continue
		}
		if len(errs[0].Error()) > 400 {
			t.Errorf("%s: the error echoes the input (%d bytes)", name, len(errs[0].Error()))
		}
	}
}

// A lease end hand-edited far into the future is pulled back to the
// policy at load, with a warning that points at it.
func TestHandEditedLeaseIsClampedToThePolicy(t *testing.T) {
	files := map[string]string{
		FileName: "[sandboxes.api]\n[sandboxes.web]\n[sandboxes.ok]\n",
		filepath.Join(Dir,
			OverridesFile): "[leases.api]\nacquired_at = 2026-11-25T10:00:00Z\nexpires_at = 2099-01-01T00:00:00Z\n" +
			"[leases.web]\nacquired_at = 2098-12-31T00:00:00Z\nexpires_at = 2099-01-01T00:00:00Z\n" +
			"[leases.ok]\nacquired_at = 2026-11-25T10:00:00Z\nexpires_at = 2026-11-25T12:00:00Z\n",
	}
	ws := t.TempDir()
	for name, data := range files {
		testutil.WriteFile(t, filepath.Join(ws, name), data)
	}
	now := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	r, err := Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Config.Leases["api"].ExpiresAt, time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("api expires %v, want %v (acquired_at + max_lifetime)", got, want)
	}
	if got, want := r.Config.Leases["web"].ExpiresAt, now.Add(24*time.Hour); !got.Equal(want) {
		t.Errorf("web expires %v, want %v (now + max_lifetime)", got, want)
	}
	if got := r.Config.Leases["ok"].ExpiresAt; !got.Equal(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("a lease within the policy moved to %v", got)
	}
	if len(r.Warnings) != 2 || r.Warnings[0].Key != "leases.api.expires_at" || r.Warnings[0].Line != 3 ||
		!strings.Contains(r.Warnings[0].Message, "past lease.max_lifetime") {
		t.Errorf("warnings = %v", r.Warnings)
	}
	for i, bound := range []string{"(24h after acquired_at 2026-11-25T10:00:00Z)",
		"(24h after acquired_at 2026-11-25T11:00:00Z); the lease ends at 2026-11-26T11:00:00Z instead"} {
		if len(r.Warnings) == 2 && !strings.Contains(r.Warnings[i].Message, bound) {
			t.Errorf("warning %d = %q, want the bound %q", i, r.Warnings[i].Message, bound)
		}
	}
	never := LeaseRecord{ExpiresAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)} // acquired_at lost
	if _, why := ClampLease(never, r.Config.Lease, now); !strings.Contains(why, "(24h from now)") {
		t.Errorf("a lease with no acquired_at: %q, want the bound 24h from now", why)
	}
	// Without a clock the bound is max_lifetime after acquisition.
	r, err = Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux"}})
	if err != nil || r.Config.Leases["api"].ExpiresAt.Year() != 2026 {
		t.Errorf("without now: %v %+v", err, r.Config.Leases)
	}
}
