package leases

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

var sampleRows = []v1test.Row{
	{ID: "inst_aaaa0001", Backend: "lima", Root: "/ws/a", WorkspaceID: "ws_0123456789ab", Status: "running",
		Created: "2026-03-26T08:00:00Z", Expires: "2026-03-26T08:30:00Z", Owner: "local", Name: "agent-aaaa0001",
		Ready: 1, Docker: "sudo -n docker"},
	{ID: "inst_bbbb0002", Backend: "lima", Status: "expired",
		Created: "2026-03-25T08:00:00Z", Expires: "2026-03-25T08:30:00Z", Name: "agent-bbbb0002"},
}

func TestReadV1CurrentSchema(t *testing.T) {
	path := v1test.Write(t, t.TempDir(), v1test.Concat([]string{v1test.Current}, v1test.Indexes), sampleRows...)
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != Current || got.Path != path {
		t.Errorf("schema %q path %q", got.Schema, got.Path)
	}
	want := []Lease{
		{InstanceID: "inst_aaaa0001", Backend: "lima", BackendInstance: "agent-aaaa0001", WorkspaceRoot: "/ws/a",
			WorkspaceID: "ws_0123456789ab", Status: "running", CreatedAt: utc("2026-03-26T08:00:00Z"),
			ExpiresAt: utc("2026-03-26T08:30:00Z"), RuntimeReady: true, DockerCommand: "sudo -n docker",
			OwnerSession: "local"},
		{InstanceID: "inst_bbbb0002", Backend: "lima", BackendInstance: "agent-bbbb0002", Status: "expired",
			CreatedAt: utc("2026-03-25T08:00:00Z"), ExpiresAt: utc("2026-03-25T08:30:00Z")},
	}
	if !reflect.DeepEqual(got.Leases, want) {
		t.Errorf("leases:\n got %+v\nwant %+v", got.Leases, want)
	}
}

func TestReadV1LegacySchema(t *testing.T) {
	path := v1test.Write(t, t.TempDir(), v1test.Concat([]string{v1test.Legacy}, v1test.Indexes), sampleRows...)
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != Legacy {
		t.Errorf("schema %q, want legacy", got.Schema)
	}
	if len(got.Leases) != 2 || got.Leases[0].BackendInstance != "agent-aaaa0001" ||
		got.Leases[1].BackendInstance != "agent-bbbb0002" {
		t.Errorf("lima_name not read: %+v", got.Leases)
	}
	if !got.Leases[0].RuntimeReady || got.Leases[0].WorkspaceRoot != "/ws/a" {
		t.Errorf("lease 0 = %+v", got.Leases[0])
	}
}

// A file from before v1's first migrations has no workspace or runtime
// columns: they read as empty.
func TestReadV1PreWorkspaceSchema(t *testing.T) {
	path := v1test.Write(t, t.TempDir(), []string{v1test.PreWorkspace}, sampleRows[:1]...)
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	l := got.Leases[0]
	if got.Schema != Legacy || l.BackendInstance != "agent-aaaa0001" || l.WorkspaceRoot != "" || l.RuntimeReady ||
		l.DockerCommand != "" {
		t.Errorf("schema %q lease %+v", got.Schema, l)
	}
}

// v1 since d461a6e adds backend_instance_name to a legacy table and copies
// lima_name into it where empty; when dropping lima_name fails (SQLite
// before 3.35; v1 before dbded36 did not try) the table keeps both.
func TestReadV1MigratedSchema(t *testing.T) {
	dir := t.TempDir()
	path := v1test.Write(t, dir, []string{v1test.Legacy}, sampleRows...)
	v1test.Exec(t, path, v1test.Migration[:2]...)
	// A row whose backend_instance_name is empty again falls back to
	// lima_name, as v1's COALESCE(NULLIF(...)) does.
	v1test.Exec(t, path, "UPDATE leases SET backend_instance_name = '' WHERE instance_id = 'inst_bbbb0002'",
		"UPDATE leases SET backend_instance_name = 'agent-renamed' WHERE instance_id = 'inst_aaaa0001'")
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != Migrated {
		t.Errorf("schema %q, want migrated", got.Schema)
	}
	if got.Leases[0].BackendInstance != "agent-renamed" || got.Leases[1].BackendInstance != "agent-bbbb0002" {
		t.Errorf("backend instances %q %q", got.Leases[0].BackendInstance, got.Leases[1].BackendInstance)
	}
	// The whole migration, DROP included: the current schema, its
	// backend_instance_name column last.
	v1test.Exec(t, path, v1test.Migration[2])
	got, err = Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != Current || got.Leases[1].BackendInstance != "" {
		t.Errorf("after DROP: schema %q leases %+v", got.Schema, got.Leases)
	}
}

// SQLite keeps what was stored whatever the column's type; Python's
// sqlite3 stores True as 1, and hand edits store anything.
func TestReadV1OddValues(t *testing.T) {
	path := v1test.Write(t, t.TempDir(), []string{v1test.Current}, []v1test.Row{
		{ID: "inst_a", Backend: "LIMA", Status: "running", Created: "2026-03-26 08:00:00.123456+05:30",
			Expires: "soon", Name: "agent-a", Ready: "true"},
		{ID: "inst_b", Backend: "hyperv", Status: "running", Created: "", Expires: "", Name: "agent-b", Ready: 0.0},
	}...)
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := got.Leases[0], got.Leases[1]
	if !a.CreatedAt.Equal(utc("2026-03-26T02:30:00.123456Z")) || !a.ExpiresAt.IsZero() || !a.RuntimeReady ||
		len(a.Problems) != 1 || !strings.Contains(a.Problems[0], `"soon"`) {
		t.Errorf("a = %+v", a)
	}
	if b.RuntimeReady || !b.CreatedAt.IsZero() || len(b.Problems) != 1 || b.Problems[0] != "expires_at is empty" {
		t.Errorf("b = %+v", b)
	}
}

func TestParseV1Time(t *testing.T) {
	for in, want := range map[string]string{
		"2026-03-26T08:00:00Z":             "2026-03-26T08:00:00Z",
		"2026-03-26T08:00:00.5Z":           "2026-03-26T08:00:00.5Z",
		"2026-03-26T08:00:00.123456+00:00": "2026-03-26T08:00:00.123456Z",
		"2026-03-26T10:00:00+02:00":        "2026-03-26T08:00:00Z",
		"2026-03-26T10:00:00+0200":         "2026-03-26T08:00:00Z",
		"2026-03-26 08:00:00":              "2026-03-26T08:00:00Z",
		"2026-03-26t08:00:00z":             "2026-03-26T08:00:00Z",
		" 2026-03-26T08:00Z ":              "2026-03-26T08:00:00Z",
		"2026-03-26":                       "2026-03-26T00:00:00Z",
	} {
		got, err := ParseTime(in)
		if err != nil || !got.Equal(utc(want)) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01T00:00:00Z", "1711440000"} {
		if got, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) = %v, want an error", bad, got)
		}
	}
}

// Read never writes v1's file, whatever journal mode v1 left it in.
func TestReadV1LeavesTheFileAlone(t *testing.T) {
	for _, mode := range []string{"DELETE", "WAL"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			path := v1test.Write(t, dir, v1test.Concat([]string{"PRAGMA journal_mode=" + mode, v1test.Current},
				v1test.Indexes), sampleRows...)
			before, _ := os.ReadFile(path)
			st, _ := os.Stat(path)
			for range 2 {
				if _, err := Read(context.Background(), path); err != nil {
					t.Fatal(err)
				}
			}
			after, _ := os.ReadFile(path)
			st2, _ := os.Stat(path)
			if !bytes.Equal(before, after) || !st.ModTime().Equal(st2.ModTime()) {
				t.Error("Read changed the database file")
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), "-journal") {
					t.Errorf("Read left %s", e.Name())
				}
			}
		})
	}
}

// A running v1 in WAL mode: what it committed is read though it sits in
// the WAL, not yet in the database file.
func TestReadV1WhileV1HoldsWAL(t *testing.T) {
	dir := t.TempDir()
	path := v1test.Write(t, dir, []string{"PRAGMA journal_mode=WAL", v1test.Current}, sampleRows[:1]...)
	v1, err := sql.Open("sqlite", path+"?_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	if _, err := v1.Exec(`INSERT INTO leases (instance_id, backend_name, profile_name, status, created_at, expires_at,
		last_used_at, backend_instance_name) VALUES ('inst_cccc0003', 'lima', 'workspace', 'running',
		'2026-03-26T08:00:00Z', '2026-03-26T09:00:00Z', '2026-03-26T08:00:00Z', 'agent-cccc0003')`); err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leases) != 2 || got.Leases[1].InstanceID != "inst_cccc0003" {
		t.Errorf("leases = %+v", got.Leases)
	}
}

// v1 writing (a rollback-journal database, locked exclusively) makes Read
// wait, then fail saying why.
func TestReadV1Locked(t *testing.T) {
	old := busyTimeout
	busyTimeout = 200 * time.Millisecond
	defer func() { busyTimeout = old }()
	path := v1test.Write(t, t.TempDir(), []string{v1test.Current}, sampleRows...)
	v1, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	v1.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := v1.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Read(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "stayed locked") || !strings.Contains(err.Error(), "stop v1") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) < busyTimeout {
		t.Errorf("gave up after %s, before the busy timeout", time.Since(start))
	}
	conn.ExecContext(ctx, "ROLLBACK")
	if _, err := Read(ctx, path); err != nil {
		t.Errorf("after v1 let go: %v", err)
	}
}

func TestReadV1Errors(t *testing.T) {
	dir := t.TempDir()
	_, err := Read(context.Background(), filepath.Join(dir, "missing.db"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("Read created the missing database")
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, bytes.Repeat([]byte("not sqlite\n"), 200), 0o644)
	if _, err := Read(context.Background(), text); err == nil ||
		!strings.Contains(err.Error(), "not a SQLite database") {
		t.Errorf("text file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	v1test.Exec(t, other, "CREATE TABLE things (x TEXT)")
	if _, err := Read(context.Background(), other); err == nil || !strings.Contains(err.Error(), "no leases table") {
		t.Errorf("no leases table: %v", err)
	}
	odd := filepath.Join(t.TempDir(), "odd.db")
	v1test.Exec(t, odd, "CREATE TABLE leases (instance_id TEXT, status TEXT)")
	if _, err := Read(context.Background(), odd); err == nil ||
		!strings.Contains(err.Error(), "backend_name, expires_at, backend_instance_name (or the legacy lima_name)") {
		t.Errorf("foreign leases table: %v", err)
	}
	if _, err := Read(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("folder: %v", err)
	}
}

// Paths with characters a URI gives meaning to are still one file.
func TestReadV1OddPath(t *testing.T) {
	plain := t.TempDir()
	v1test.Write(t, plain, []string{v1test.Current}, sampleRows...)
	dir := filepath.Join(t.TempDir(), "v1 state?mode=rw#%20")
	if err := os.Rename(plain, dir); err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), filepath.Join(dir, "leases.db"))
	if err != nil || len(got.Leases) != 2 {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestV1DBPath(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if p, fromEnv := DBPath(getenv); p != "state/leases.db" || fromEnv {
		t.Errorf("default = %q %v", p, fromEnv)
	}
	env["LEASE_DB_PATH"] = "/srv/v1/leases.db"
	if p, fromEnv := DBPath(getenv); p != "/srv/v1/leases.db" || !fromEnv {
		t.Errorf("env = %q %v", p, fromEnv)
	}
}
