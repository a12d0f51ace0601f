// Package v1test builds SandboxForge v1 lease databases for tests, with
// the statements v1 itself runs.
package v1test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// The statements SandboxForge v1 (github.com/Abin-Thankachan/sandbox-forge-mcp)
// runs on its lease database, verbatim.

// Current is src/lima_mcp_server/db.py:63-79 at 24196cc (HEAD).
const Current = `
                CREATE TABLE IF NOT EXISTS leases (
                    instance_id TEXT PRIMARY KEY,
                    backend_name TEXT NOT NULL,
                    profile_name TEXT NOT NULL,
                    workspace_root TEXT,
                    workspace_id TEXT,
                    status TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    expires_at TEXT NOT NULL,
                    last_used_at TEXT NOT NULL,
                    owner_session TEXT,
                    ssh_port INTEGER,
                    backend_instance_name TEXT NOT NULL,
                    runtime_name TEXT,
                    runtime_ready INTEGER NOT NULL DEFAULT 0,
                    docker_command TEXT
                )`

// Legacy is src/lima_mcp_server/db.py:63-79 at 6668f3e, before the
// Hyper-V backend (d461a6e) renamed lima_name.
const Legacy = `
                CREATE TABLE IF NOT EXISTS leases (
                    instance_id TEXT PRIMARY KEY,
                    backend_name TEXT NOT NULL,
                    profile_name TEXT NOT NULL,
                    workspace_root TEXT,
                    workspace_id TEXT,
                    status TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    expires_at TEXT NOT NULL,
                    last_used_at TEXT NOT NULL,
                    owner_session TEXT,
                    ssh_port INTEGER,
                    lima_name TEXT NOT NULL,
                    runtime_name TEXT,
                    runtime_ready INTEGER NOT NULL DEFAULT 0,
                    docker_command TEXT
                )`

// PreWorkspace is the leases table v1's first migrations (db.py:82-91
// at 6668f3e) upgrade: without the columns they add.
const PreWorkspace = `
                CREATE TABLE IF NOT EXISTS leases (
                    instance_id TEXT PRIMARY KEY,
                    backend_name TEXT NOT NULL,
                    profile_name TEXT NOT NULL,
                    status TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    expires_at TEXT NOT NULL,
                    last_used_at TEXT NOT NULL,
                    owner_session TEXT,
                    ssh_port INTEGER,
                    lima_name TEXT NOT NULL
                )`

// Indexes are db.py:108-134 at HEAD: the leases indexes and the tasks
// table.
var Indexes = []string{
	"CREATE INDEX IF NOT EXISTS idx_leases_expires_at ON leases(expires_at)",
	"CREATE INDEX IF NOT EXISTS idx_leases_status ON leases(status)",
	"CREATE INDEX IF NOT EXISTS idx_leases_workspace_id ON leases(workspace_id)",
	`
                CREATE TABLE IF NOT EXISTS tasks (
                    task_id TEXT PRIMARY KEY,
                    instance_id TEXT NOT NULL,
                    command TEXT NOT NULL,
                    cwd TEXT,
                    env_json TEXT,
                    status TEXT NOT NULL,
                    pid INTEGER,
                    created_at TEXT NOT NULL,
                    started_at TEXT,
                    finished_at TEXT,
                    exit_code INTEGER,
                    log_path TEXT NOT NULL,
                    exit_code_path TEXT NOT NULL,
                    error_message TEXT,
                    FOREIGN KEY(instance_id) REFERENCES leases(instance_id)
                )`,
	"CREATE INDEX IF NOT EXISTS idx_tasks_instance_id ON tasks(instance_id)",
	"CREATE INDEX IF NOT EXISTS idx_tasks_status ON tasks(status)",
}

// Migration is db.py:86-100 at HEAD: what v1 (since dbded36) does to a
// legacy table on start.
var Migration = []string{
	"ALTER TABLE leases ADD COLUMN backend_instance_name TEXT",
	`
                    UPDATE leases
                    SET backend_instance_name = COALESCE(NULLIF(backend_instance_name, ''), lima_name)
                    WHERE backend_instance_name IS NULL OR backend_instance_name = ''
                    `,
	"ALTER TABLE leases DROP COLUMN lima_name",
}

// Row is one lease as v1's create_lease inserts it. Name goes into
// backend_instance_name or lima_name, whichever the table has (both when
// it has both, unless LegacyName is set).
type Row struct {
	ID, Backend, Root, WorkspaceID, Status, Created, Expires, Owner, Name string
	LegacyName                                                            string // lima_name when the table has both
	Ready                                                                 any    // runtime_ready; nil: 0
	Docker                                                                any    // docker_command
}

// Write makes a v1 database at dir/leases.db: the statements, then the
// rows as v1 would insert them. It returns the file's path.
func Write(t testing.TB, dir string, stmts []string, rows ...Row) string {
	t.Helper()
	path := filepath.Join(dir, "leases.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", strings.TrimSpace(s), err)
		}
	}
	cols := map[string]bool{}
	rs, err := db.Query("PRAGMA table_info(leases)")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var cid, notNull, pk int
		var name, typ string
		var dflt any
		if err := rs.Scan(&cid, &name, &typ, &notNull, &dflt, &pk); err != nil {
			t.Fatal(err)
		}
		cols[name] = true
	}
	rs.Close()
	for _, r := range rows {
		names := []string{
			"instance_id",
			"backend_name",
			"profile_name",
			"status",
			"created_at",
			"expires_at",
			"last_used_at",
			"owner_session",
			"ssh_port",
		}
		vals := []any{r.ID, r.Backend, "workspace", r.Status, r.Created, r.Expires, r.Created, nullable(r.Owner), nil}
		if cols["workspace_root"] {
			names = append(names, "workspace_root", "workspace_id")
			vals = append(vals, nullable(r.Root), nullable(r.WorkspaceID))
		}
		if cols["backend_instance_name"] {
			names = append(names, "backend_instance_name")
			vals = append(vals, r.Name)
		}
		if cols["lima_name"] {
			names = append(names, "lima_name")
			if r.LegacyName != "" {
				vals = append(vals, r.LegacyName)
			} else {
				vals = append(vals, r.Name)
			}
		}
		if cols["runtime_ready"] {
			names = append(names, "runtime_ready", "docker_command")
			ready := r.Ready
			if ready == nil {
				ready = 0
			}
			vals = append(vals, ready, r.Docker)
		}
		q := "INSERT INTO leases (" + strings.Join(
			names,
			", ",
		) + ") VALUES (" + strings.TrimSuffix(
			strings.Repeat("?, ", len(names)),
			", ",
		) + ")"
		if _, err := db.Exec(q, vals...); err != nil {
			t.Fatalf("inserting %s: %v", r.ID, err)
		}
	}
	return path
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Exec runs statements on a database, as v1 or a person would.
func Exec(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", strings.TrimSpace(s), err)
		}
	}
}

// Concat joins statement lists.
func Concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
