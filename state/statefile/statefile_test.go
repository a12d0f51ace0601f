package statefile

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/upgrade/*.out.json from what Read and Write make now")

// TestUpgradeFixtures reads each file an earlier sbf wrote
// (testdata/upgrade/*.in.json, made by that build's own code) and writes
// it as this build does; the result must be the golden *.out.json, which
// must itself read and write back unchanged.
func TestUpgradeFixtures(t *testing.T) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "upgrade", "*.in.json"))
	if len(ins) == 0 {
		t.Fatal("no fixtures")
	}
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := rewrite(t, readFile(t, in))
			out := strings.TrimSuffix(in, ".in.json") + ".out.json"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := readFile(t, out)
			if !bytes.Equal(got, want) {
				t.Errorf("%s read and written:\n%s\nwant (%s):\n%s", in, got, out, want)
			}
			if again := rewrite(t, want); !bytes.Equal(again, want) {
				t.Errorf("%s does not read and write back unchanged:\n%s", out, again)
			}
		})
	}
}

func TestTheCurrentFormatRoundTripsByteForByte(t *testing.T) {
	in := readFile(t, filepath.Join("testdata", "upgrade", "v1-written-by.in.json"))
	if got := rewrite(t, in); !bytes.Equal(got, in) {
		t.Errorf("written:\n%s\nwant:\n%s", got, in)
	}
	f, err := Read(bytes.NewReader(in))
	if err != nil || f.WrittenBy != "0.9.0" || f.Tasks["task_0001"].ExitCode == nil {
		t.Errorf("read %+v, %v", f, err)
	}
}

func TestReadRefusesWhatItCannotRead(t *testing.T) {
	for doc, want := range map[string]string{
		`{"version": 99, "lineage": "x"}`:                          "newer sbf",
		`{"lineage": "x"}`:                                         "no version",
		`{"version": "1", "lineage": "x"}`:                         "cannot unmarshal",
		`{"version": 0, "lineage": "x"}`:                           "no upgrade from state version 0",
		`{"version": 1}`:                                           "no lineage",
		`{"version": 1, "lineage": "x", "sandboxes": {"a": null}}`: `sandbox "a" has no record`,
		`{"version": 1, "lineage": "x", "sandboxes": {"api": `:     "unexpected end",
	} {
		if _, err := Read(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want an error containing %q", doc, err, want)
		}
	}
}

func TestWriteRefusesWhatReadWouldRefuse(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, &File{Version: Version}); err == nil || b.Len() != 0 {
		t.Errorf("a file without a lineage was written: %v, %q", err, b.String())
	}
	f := &File{Lineage: "x", Sandboxes: map[string]*Sandbox{"a": nil}}
	if err := Write(&b, f); err == nil || b.Len() != 0 {
		t.Errorf("a nil record was written: %v, %q", err, b.String())
	}
	if err := Write(&b, &File{Lineage: "x"}); err != nil || !strings.HasPrefix(b.String(), "{\n  \"version\": 1,") {
		t.Errorf("Write = %v, %q: want the current version whatever the File says", err, b.String())
	}
}

// The v1, v2 and v3 of this test are a made-up history: v2 added a
// workspace id, v3 renamed root to workspace_root. Each step decodes its
// own version's types, as real ones will.
type fakeV1 struct {
	Version int    `json:"version"`
	Lineage string `json:"lineage"`
	Root    string `json:"root"`
}

type fakeV2 struct {
	fakeV1
	WorkspaceID string `json:"workspace_id"`
}

var fakeHistory = map[int]upgrade{
	1: func(old []byte) ([]byte, error) {
		var v1 fakeV1
		if err := json.Unmarshal(old, &v1); err != nil {
			return nil, err
		}
		v1.Version = 2
		return json.Marshal(fakeV2{fakeV1: v1, WorkspaceID: "ws_from_v1"})
	},
	2: func(old []byte) ([]byte, error) {
		var v2 fakeV2
		if err := json.Unmarshal(old, &v2); err != nil {
			return nil, err
		}
		return json.Marshal(File{Version: 3, Lineage: v2.Lineage, WorkspaceRoot: v2.Root, WorkspaceID: v2.WorkspaceID})
	},
}

func TestUpgradesRunStepByStep(t *testing.T) {
	f, err := readAt([]byte(`{"version": 1, "lineage": "x", "root": "/old"}`), 3, fakeHistory)
	if err != nil || f.Version != 3 || f.WorkspaceID != "ws_from_v1" || f.WorkspaceRoot != "/old" || f.Lineage != "x" {
		t.Errorf("upgraded = %+v, %v", f, err)
	}
	f, err = readAt([]byte(`{"version": 2, "lineage": "x", "root": "/r", "workspace_id": "ws_2"}`), 3, fakeHistory)
	if err != nil || f.WorkspaceID != "ws_2" || f.WorkspaceRoot != "/r" {
		t.Errorf("from version 2 = %+v, %v", f, err)
	}
	if _, err := readAt([]byte(`{"version": 0, "lineage": "x"}`), 3, fakeHistory); err == nil {
		t.Error("a version with no upgrade path was accepted")
	}
	skips := map[int]upgrade{1: func([]byte) ([]byte, error) { return []byte(`{"version": 3, "lineage": "x"}`), nil }}
	if _, err := readAt([]byte(`{"version": 1, "lineage": "x"}`), 3, skips); err == nil {
		t.Error("a step that skipped a version was accepted")
	}
}

func rewrite(t *testing.T, doc []byte) []byte {
	t.Helper()
	f, err := Read(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSnapshotRecordsStaySortedAndGoWithTheirSandbox(t *testing.T) {
	f := &File{Lineage: "x"}
	for _, s := range []*Snapshot{{Sandbox: "web", Name: "b", Instance: "i-web"}, {Sandbox: "api", Name: "z",
		Instance: "i-api"}, {Sandbox: "api", Name: "a", Instance: "i-api"}, {Sandbox: "api", Name: "z",
		Instance: "i-api", SizeBytes: 7}} {
		f.PutSnapshot(s)
	}
	var got []string
	for _, s := range f.Snapshots {
		got = append(got, s.Sandbox+"/"+s.Name)
	}
	if strings.Join(got, " ") != "api/a api/z web/b" || f.FindSnapshot("api", "z").SizeBytes != 7 {
		t.Fatalf("records: %v", got)
	}
	if len(f.SnapshotsOf("api")) != 2 || f.FindSnapshot("web", "a") != nil {
		t.Errorf("lookups: %v", f.SnapshotsOf("api"))
	}
	f.DropSnapshotsOf("api", "i-other")
	f.DropSnapshot("web", "b")
	if len(f.Snapshots) != 2 {
		t.Errorf("a replaced instance's drop took another's records: %v", f.Snapshots)
	}
	f.DropSnapshotsOf("api", "")
	if f.Snapshots != nil {
		t.Errorf("left %v", f.Snapshots)
	}
}
