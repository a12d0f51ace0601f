package spec

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

func load(t *testing.T, files map[string]string, req *Request) (*Resolved, Errors) {
	t.Helper()
	ws := t.TempDir()
	for name, data := range files {
		testutil.WriteFile(t, filepath.Join(ws, name), data)
	}
	r, err := Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux", Arch: "amd64"}, Request: req})
	var errs Errors
	if err != nil && !errors.As(err, &errs) {
		t.Fatalf("Load: %v", err)
	}
	return r, errs
}

func TestEmptyWorkspaceIsValidWithV1Defaults(t *testing.T) {
	r, errs := load(t, nil, nil)
	if errs != nil {
		t.Fatalf("errors: %v", errs)
	}
	if got := strings.Join(r.Sources, ","); got != "defaults" {
		t.Errorf("sources = %q, want defaults", got)
	}
	c := r.Config
	if c.VM.CPUs != 1 || c.VM.MemoryGiB != 2 || c.VM.DiskGiB != 15 || c.VM.Template != "template:docker" ||
		c.VM.VMType != "qemu" {
		t.Errorf("vm defaults = %+v", c.VM)
	}
	if c.Infra.MySQL.Image != "mysql:8.0" || c.Infra.Redis.Image != "redis:7-alpine" ||
		c.Infra.NetworkNamePrefix != "lima-net" {
		t.Errorf("infra defaults = %+v", c.Infra)
	}
	if c.Lease.DefaultTTL.Std() != 30*time.Minute || c.Lease.MaxTTL.Std() != 2*time.Hour ||
		c.Lease.MaxLifetime.Std() != 24*time.Hour || c.Lease.MaxInstances != 3 {
		t.Errorf("lease defaults = %+v", c.Lease)
	}
}

func TestEmptyFileIsNotASource(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: "# nothing yet\n"}, nil)
	if errs != nil || len(r.Sources) != 1 {
		t.Fatalf("sources = %v, errors = %v", r.Sources, errs)
	}
}

func TestNewerWorkspaceNameWins(t *testing.T) {
	r, _ := load(t, map[string]string{
		".lima-mcp.toml":   "[vm]\ncpus = 2\nmemory_gib = 3\n",
		".orbitforge.toml": "[vm]\ncpus = 3\n",
		FileName:           "[vm]\ncpus = 4\n",
	}, nil)
	if r.Config.VM.CPUs != 4 || r.Config.VM.MemoryGiB != 3 {
		t.Errorf("vm = %+v, want cpus 4 from %s and memory 3 from the legacy file", r.Config.VM, FileName)
	}
}

func TestGlobalFilesFollowConfigHome(t *testing.T) {
	home := t.TempDir()
	testutil.WriteFile(t, filepath.Join(home, "sandboxforge-mcp/config.toml"), "[vm]\ncpus = 2\n")
	testutil.WriteFile(t, filepath.Join(home, "orbitforge-mcp/config.toml"), "[vm]\ncpus = 9\nmemory_gib = 5\n")
	ws := t.TempDir()
	r, err := Load(Options{Backends: linked, Root: ws, Host: CurrentHost(), ConfigHome: home})
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.VM.CPUs != 2 || r.Config.VM.MemoryGiB != 5 {
		t.Errorf("vm = %+v, want cpus 2 (newer name) and memory 5 (older name)", r.Config.VM)
	}
	want := []string{SourceDefaults, filepath.Join(home, "orbitforge-mcp/config.toml"), filepath.Join(home,
		"sandboxforge-mcp/config.toml")}
	if strings.Join(r.Sources, "|") != strings.Join(want, "|") {
		t.Errorf("sources = %v, want %v", r.Sources, want)
	}
}

func TestWorkspaceIdentity(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	abs, id, err := WorkspaceIdentity(link)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(real))
	if want := "ws_" + hex.EncodeToString(sum[:])[:12]; id != want || abs != real {
		t.Errorf("identity = %s %s, want %s %s", abs, id, real, want)
	}
	if len(id) != 15 {
		t.Errorf("id %q: want 15 characters like v1", id)
	}

	missing := filepath.Join(dir, "nope")
	if _, _, err := WorkspaceIdentity(missing); err == nil ||
		!strings.Contains(err.Error(), "does not exist: "+missing) {
		t.Errorf("missing root: err = %v", err)
	}
	file := filepath.Join(dir, "file")
	testutil.WriteFile(t, file, "x")
	if _, _, err := WorkspaceIdentity(file); err == nil || !strings.Contains(err.Error(), "must be a directory: ") {
		t.Errorf("file root: err = %v", err)
	}
	if _, err := Load(Options{Backends: linked, Root: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load of a missing root: err = %v", err)
	}
}

func TestHostAwareDefaults(t *testing.T) {
	for _, tc := range []struct{ os, vmType, driver string }{
		{"linux", "qemu", "lima"},
		{"darwin", "vz", "lima"},
		{"windows", "", "hyperv"},
	} {
		h := Host{OS: tc.os}.With(linked)
		if got := Defaults(h).VM.VMType; got != tc.vmType {
			t.Errorf("%s: vm_type = %q, want %q", tc.os, got, tc.vmType)
		}
		if got := h.ResolveDriver("auto"); got != tc.driver {
			t.Errorf("%s: auto driver = %q, want %q", tc.os, got, tc.driver)
		}
		if got := h.ResolveDriver("sim"); got != "sim" {
			t.Errorf("%s: an explicit driver must be kept, got %q", tc.os, got)
		}
		if got := (Host{OS: tc.os}).ResolveDriver("auto"); got != "auto" {
			t.Errorf("%s: with no backend asked, auto resolved to %q", tc.os, got)
		}
	}
}

func TestEnumsAreTrimmedAndLowerCased(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: "[vm]\nvm_type = \" VZ \"\ndriver = \"SIM\"\n"}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	if r.Config.VM.VMType != "vz" || r.Config.VM.Driver != "sim" {
		t.Errorf("vm = %+v", r.Config.VM)
	}
}

func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30m", 30 * time.Minute, ""},
		{"12h", 12 * time.Hour, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1.5d", 36 * time.Hour, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"-5h", 0, "negative"},
		{"", 0, "non-empty"},
		{"5 parsecs", 0, "invalid duration"},
	} {
		d, err := ParseDuration(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDuration(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || d.Std() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, d.Std(), err, tc.want)
		}
		if back, err := ParseDuration(d.String()); err != nil || back != d {
			t.Errorf("%q renders as %q, which reads back as %v, %v", tc.in, d.String(), back.Std(), err)
		}
	}
}

func TestV1DurationKeysTakeHours(t *testing.T) {
	r, errs := load(t,
		map[string]string{FileName: "[build.prebuilt.staleness_check]\ncheck_age_threshold = " +
			"12\n[build.staleness_detection]\nmax_age_threshold = 1.5\n"}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := r.Config.Build.Prebuilt.StalenessCheck.CheckAgeThreshold.Std(); got != 12*time.Hour {
		t.Errorf("check_age_threshold = %v", got)
	}
	if got := r.Config.Build.StalenessDetection.MaxAgeThreshold.Std(); got != 90*time.Minute {
		t.Errorf("max_age_threshold = %v", got)
	}
	_, errs = load(t, map[string]string{FileName: "[build.staleness_detection]\nmax_age_threshold = -1\n"}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "negative") {
		t.Errorf("negative hours: %v", errs)
	}
}

func TestParseSet(t *testing.T) {
	req, err := ParseSet([]string{"vm.cpus=4", "vm.arch=aarch64", `sandboxes.api.ports=["8080:80"]`, "vm.mounts=[]"})
	if err != nil {
		t.Fatal(err)
	}
	r, errs := load(t, map[string]string{FileName: "[sandboxes.api]\n"}, req)
	if errs != nil {
		t.Fatal(errs)
	}
	api := r.Config.Sandboxes["api"]
	if api.CPUs != 4 || api.Arch != "aarch64" || len(api.Ports) != 1 || api.Ports[0] != "8080:80" {
		t.Errorf("api = %+v", api)
	}
	if r.Sources[len(r.Sources)-1] != SourceRequest {
		t.Errorf("sources = %v, want request_overrides last", r.Sources)
	}
	for _, bad := range []string{"vm.cpus", "=4", "vm..cpus=1"} {
		if _, err := ParseSet([]string{bad}); err == nil {
			t.Errorf("ParseSet(%q) accepted", bad)
		}
	}
	if _, err := ParseSet([]string{"vm=1", "vm.cpus=2"}); err == nil {
		t.Error("setting a key below a scalar was accepted")
	}
	req, _ = ParseSet([]string{"vm.cpus=true"})
	_, errs = load(t, nil, req)
	if len(errs) != 1 || errs[0].File != SourceRequest || errs[0].Line != 1 || errs[0].Column != 9 {
		t.Errorf("errors = %+v, want one at request_overrides:1:9", errs)
	}
}

func TestJSONOverrides(t *testing.T) {
	overrides := `{"vm": {"cpus": 3, "memory_gib": 2.5, "arch": null}, "infra": {"network_name": null}}`
	req, err := JSONOverrides(json.RawMessage(overrides))
	if err != nil {
		t.Fatal(err)
	}
	r, errs := load(t, map[string]string{FileName: "[vm]\narch = \"aarch64\"\n"}, req)
	if errs != nil {
		t.Fatal(errs)
	}
	if r.Config.VM.CPUs != 3 || r.Config.VM.MemoryGiB != 2.5 || r.Config.VM.Arch != "" {
		t.Errorf("vm = %+v: cpus 3, memory 2.5 and arch reset by null expected", r.Config.VM)
	}
	req, _ = JSONOverrides(json.RawMessage(`{"vm": {"cpus": null, "disk_gib": 1.0e400}}`))
	_, errs = load(t, nil, req)
	if len(errs) != 2 {
		t.Errorf("errors = %v, want null cpus and infinite disk rejected", errs)
	}
	if _, err := JSONOverrides(json.RawMessage(`[1]`)); err == nil {
		t.Error("a JSON array was accepted as overrides")
	}
}

func TestErrorsCarryPositionsAndV1Sentences(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "[vm]\ncpus = 1.5\n"}, nil)
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	e := errs[0]
	if e.Line != 2 || e.Column != 8 || e.Key != "vm.cpus" || !filepath.IsAbs(e.File) {
		t.Errorf("error = %+v", e)
	}
	if got := e.Sentence(); got != "vm.cpus must be a positive integer (got 1.5)" {
		t.Errorf("sentence = %q", got)
	}
}

func TestUnknownKeyListsAllowedKeys(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "[infra.redis]\nimg = \"x\"\n"}, nil)
	want := "is not supported (allowed: container_name_prefix, enabled, extra_env, image, inject_env_to)"
	if len(errs) != 1 || errs[0].Key != "infra.redis.img" || errs[0].Message != want || errs[0].Line != 2 ||
		errs[0].Column != 1 {
		t.Errorf("errors = %+v", errs)
	}
}

func TestLeasesLoadFromManagedOverrides(t *testing.T) {
	r, errs := load(t, map[string]string{
		FileName: "[sandboxes.api]\n",
		filepath.Join(Dir,
			OverridesFile): "[leases.api]\nacquired_at = 2026-11-25T10:00:00Z\nexpires_at = \"2026-11-25T12:00:00+01:00\"\n",
	}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	l := r.Config.Leases["api"]
	if want := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC); !l.ExpiresAt.Equal(want) ||
		l.ExpiresAt.Location() != time.UTC {
		t.Errorf("lease = %+v, want expiry %v in UTC", l, want)
	}
	_, errs = load(t, map[string]string{filepath.Join(Dir,
		OverridesFile): "[leases.api]\nacquired_at = 2026-11-25T10:00:00Z\n"}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "no expires_at") {
		t.Errorf("errors = %v", errs)
	}
}

func TestSbfImageLocations(t *testing.T) {
	r, errs := load(t,
		map[string]string{".sandboxforge.toml": "[vm.image]\nlocation = \"sbf:debian-12\"\n[vm]\nemulation = " +
			"\"never\"\n"}, nil)
	if len(errs) != 0 || r.Config.VM.Image.Location != "sbf:debian-12" || r.Config.VM.Emulation != "never" {
		t.Fatalf("errs %v, vm %+v", errs, r.Config.VM)
	}
	_, errs = load(t,
		map[string]string{".sandboxforge.toml": "[vm.image]\nlocation = \"sbf:debian-99\"\n[vm]\nemulation = " +
			"\"sometimes\"\n"}, nil)
	text := errs.Error()
	if len(errs) != 2 || !strings.Contains(text, `known: sbf:debian-12`) || !strings.Contains(text, "vm.emulation") {
		t.Errorf("errors: %v", errs)
	}
}

// A spec may name a backend this build does not link: it is valid on
// every host, and this one warns, where the name is written and listing
// what it links, since a misspelt name looks the same. A name no backend
// could have is an error, as is a table for an unlinked backend no driver
// names (a misspelt table); the unlinked backend's own table is kept.
func TestBackendsThisBuildDoesNotLinkAreValid(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: "[vm]\ndriver = \"lmia\"\n\n[vm.lmia]\nzone = \"a\"\n" +
		"[sandboxes.api]\ndriver = \"LIMA\"\n"}, nil)
	if errs != nil || len(r.Warnings) != 1 || r.Warnings[0].Key != "vm.driver" || r.Warnings[0].Line != 2 ||
		!strings.Contains(r.Warnings[0].Message, "does not link (it links: hyperv, kubevirt, lima, sim, vz)") ||
		!strings.Contains(r.Warnings[0].Message, "BACKEND_UNAVAILABLE") {
		t.Fatalf("errors %v, warnings %v", errs, r.Warnings)
	}
	if r.Config.VM.Driver != "lmia" || r.Config.Sandboxes["api"].Driver != "lima" ||
		r.Config.VM.Backends["lmia"]["zone"] != "a" {
		t.Errorf("vm = %+v, api = %+v", r.Config.VM, r.Config.Sandboxes["api"])
	}
	_, errs = load(t, map[string]string{FileName: "[vm]\ndriver = \"Lima VM\"\n"}, nil)
	if len(errs) != 1 || !strings.Contains(errs.Error(), "must be one of: auto, hyperv, kubevirt, lima, sim, vz") {
		t.Errorf("errors: %v", errs)
	}
	_, errs = load(t, map[string]string{FileName: "[vm]\ncpus = 2\n[vm.kubvirt]\nnamespace = \"x\"\n"}, nil)
	if len(errs) != 1 || errs[0].Key != "vm.kubvirt" || errs[0].Line != 3 ||
		!strings.Contains(errs[0].Message, "is not supported (allowed: arch, cpus, disk_gib, driver, emulation, "+
			"image, kubevirt, memory_gib") {
		t.Errorf("errors: %v", errs)
	}
}

// A linked backend's table holds the keys its registration declares, each
// a string: anything else is an error where it is written. Tables merge
// as any table does, and a sandbox's lays over [vm]'s.
func TestBackendTablesHoldTheirRegistrationsKeys(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "[vm.kubevirt]\nnmspace = \"x\"\n[sandboxes.api.kubevirt]\n" +
		"image = 3\n[vm.lima]\nx = \"y\"\n"}, nil)
	want := []string{
		":2:1: vm.kubevirt.nmspace: is not supported (allowed: image, instancetype, namespace, preference, " +
			"storage_class)",
		":4:9: sandboxes.api.kubevirt.image: must be a string (got 3)",
		":5:5: vm.lima: is not supported (allowed: arch, cpus, disk_gib, driver, emulation, image, kubevirt, ",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors: %v", errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %v, want %s", i, errs[i], w)
		}
	}
	r, errs := load(t, map[string]string{
		FileName:      "[vm]\ndriver = \"kubevirt\"\n[vm.kubevirt]\nnamespace = \"team\"\nimage = \"reg/a:1\"\n",
		LocalFileName: "[sandboxes.api.kubevirt]\nimage = \"reg/b:2\"\nstorage_class = \"\"\n[sandboxes.web]\n",
	}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	api, web := r.Config.Sandboxes["api"], r.Config.Sandboxes["web"]
	if got := api.BackendSettings("kubevirt"); len(got) != 2 || got["namespace"] != "team" || got["image"] != "reg/b:2" {
		t.Errorf("api's settings = %v", got)
	}
	if got := web.BackendSettings("kubevirt"); len(got) != 2 || got["image"] != "reg/a:1" {
		t.Errorf("web's settings = %v", got)
	}
	if r.Config.VM.Backends["kubevirt"]["image"] != "reg/a:1" || api.BackendSettings("lima") != nil {
		t.Errorf("[vm.kubevirt] = %v", r.Config.VM.Backends)
	}
	// --set and MCP overrides reach a backend's table too.
	req, err := ParseSet([]string{"sandboxes.web.kubevirt.preference=fast"})
	if err != nil {
		t.Fatal(err)
	}
	r, errs = load(t, map[string]string{FileName: "[sandboxes.web]\n"}, req)
	if errs != nil || r.Config.Sandboxes["web"].BackendSettings("kubevirt")["preference"] != "fast" {
		t.Errorf("%v %+v", errs, r.Config.Sandboxes["web"])
	}
}

// The resolved configuration shows the backend tables as a file says
// them, in TOML and JSON, and its TOML loads back to the same thing.
func TestBackendTablesRenderAsTheFileSaysThem(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: "[vm.kubevirt]\nnamespace = \"team\"\n[sandboxes.api]\n"}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	cfg := r.Config
	cfg.Leases = nil // sbf writes them in its own document only
	out, err := cfg.TOML()
	if err != nil || !strings.Contains(string(out), "\n[vm.kubevirt]\nnamespace = 'team'\n") ||
		!strings.Contains(string(out), "\n[sandboxes.api.kubevirt]\nnamespace = 'team'\n") {
		t.Fatalf("%v\n%s", err, out)
	}
	again, errs := load(t, map[string]string{FileName: string(out)}, nil)
	if errs != nil || again.Config.Sandboxes["api"].BackendSettings("kubevirt")["namespace"] != "team" {
		t.Fatalf("%v %+v", errs, again.Config.Sandboxes)
	}
	raw, err := json.Marshal(r)
	var doc struct {
		Config struct {
			VM        map[string]any            `json:"vm"`
			Sandboxes map[string]map[string]any `json:"sandboxes"`
		} `json:"config"`
	}
	if err != nil || json.Unmarshal(raw, &doc) != nil || doc.Config.VM["cpus"] == nil ||
		doc.Config.VM["kubevirt"].(map[string]any)["namespace"] != "team" ||
		doc.Config.Sandboxes["api"]["kubevirt"] == nil || doc.Config.Sandboxes["api"]["compose"] == nil {
		t.Errorf("%v %s", err, raw)
	}
}

func TestFindWorkspaceWalksUp(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	if _, ok := FindWorkspace(deep); ok && !HasSpec(root) {
		// A spec above the temp folder would make this test meaningless.
		t.Skip("a workspace spec exists above the temporary folder")
	}
	testutil.WriteFile(t, filepath.Join(root, "a", ".orbitforge.toml"), "")
	if got, ok := FindWorkspace(deep); !ok || got != filepath.Join(root, "a") {
		t.Errorf("FindWorkspace = %q %v", got, ok)
	}
	if HasSpec(deep) || !HasSpec(filepath.Join(root, "a")) {
		t.Error("HasSpec")
	}
	// Bounded: nothing above top is looked at, top itself is.
	if got, ok := FindWorkspaceWithin(deep, filepath.Join(root, "a", "b")); ok {
		t.Errorf("FindWorkspaceWithin looked above its top: %q", got)
	}
	if got, ok := FindWorkspaceWithin(deep, filepath.Join(root, "a")); !ok || got != filepath.Join(root, "a") {
		t.Errorf("FindWorkspaceWithin(top a) = %q %v", got, ok)
	}
}

// A path's origin is the last layer whose tree holds it, keys quoted with
// dots included, as the warnings and ceilings that ask for it expect.
func TestOriginIsTheLastLayerThatSetAPath(t *testing.T) {
	file := &layer{source: "file", tree: map[string]any{"sandboxes": map[string]any{
		"api": map[string]any{"ttl": "1h", "env": map[string]any{"A.B": "x"}}}}}
	managed := &layer{source: "managed", tree: map[string]any{"sandboxes": map[string]any{
		"api": map[string]any{"ttl": "2h"}}, "leases": map[string]any{"api": map[string]any{}}}}
	r := &Resolved{layers: []*layer{file, managed}}
	for path, want := range map[string]string{
		"sandboxes.api.ttl": "managed", "sandboxes.api": "managed", "sandboxes.api.env": "file",
		"sandboxes.api.env.A.B": "file", "leases.api": "managed", "sandboxes.api.env.A": "",
		"sandboxes.web": "", "sandboxes.api.ttl.x": "", "": "",
	} {
		got := ""
		if l := r.origin(path); l != nil {
			got = l.source
		}
		if got != want {
			t.Errorf("origin(%q) = %q, want %q", path, got, want)
		}
	}
}
