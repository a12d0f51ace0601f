// Package leases reads SandboxForge v1's lease database (the Python MCP
// server's SQLite file) without changing it, and decides what taking over
// each lease means for sbf: adopt its VM, delete a VM v1 leaked, or leave
// it.
package leases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DriverName is the database/sql driver Read opens v1's file with. The
// binary that reads v1's database registers it (cmd/sbf links
// modernc.org/sqlite, pure Go: sbf is built without cgo); sbf-server, which
// hands import-v1 to sbf, links no SQLite (5 MB of its pages, issue 42).
const DriverName = "sqlite"

// SQLite's primary result codes (sqlite3.h) that wrapErr explains.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
	sqliteNotADB = 26
)

// EnvDBPath is the variable v1 reads its database path from; DefaultDBPath
// is its default, relative to the folder v1 was started in.
const (
	EnvDBPath     = "LEASE_DB_PATH"
	DefaultDBPath = "state/leases.db"
)

// DBPath is where v1 keeps its database as seen from this process: the
// LEASE_DB_PATH it would read, else its default. fromEnv says which; a
// relative default only finds v1's file when sbf runs in v1's folder.
func DBPath(getenv func(string) string) (path string, fromEnv bool) {
	if p := getenv(EnvDBPath); p != "" {
		return p, true
	}
	return DefaultDBPath, false
}

// Schema names the shape of a v1 leases table.
type Schema string

const (
	// Current has backend_instance_name and no lima_name (v1 since the
	// Hyper-V backend, commit d461a6e, once its migration dropped lima_name).
	Current Schema = "current"
	// Legacy has lima_name instead of backend_instance_name (v1 before
	// d461a6e).
	Legacy Schema = "legacy"
	// Migrated has both: v1's migration added backend_instance_name and
	// copied lima_name into it but could not drop lima_name (SQLite
	// before 3.35, or v1 between d461a6e and dbded36, which did not try).
	Migrated Schema = "migrated"
)

// Lease is one row of v1's leases table.
type Lease struct {
	InstanceID string `json:"instance_id"`  // inst_XXXXXXXX: what v1's clients call it
	Backend    string `json:"backend_name"` // v1's backend: lima or hyperv
	// BackendInstance is the VM's name in its backend (agent-XXXXXXXX):
	// backend_instance_name, or lima_name where that is empty.
	BackendInstance string    `json:"backend_instance_name"`
	WorkspaceRoot   string    `json:"workspace_root,omitempty"`
	WorkspaceID     string    `json:"workspace_id,omitempty"`
	Status          string    `json:"status"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
	ExpiresAt       time.Time `json:"expires_at,omitzero"`
	RuntimeReady    bool      `json:"runtime_ready"`
	DockerCommand   string    `json:"docker_command,omitempty"`
	OwnerSession    string    `json:"owner_session,omitempty"`
	// Problems are what could not be read from the row (a timestamp that
	// is not one); the row is kept so the report can name it.
	Problems []string `json:"problems,omitempty"`
}

// DB is what Read found.
type DB struct {
	Path   string  `json:"path"` // absolute
	Schema Schema  `json:"schema"`
	Leases []Lease `json:"leases"` // by instance_id
}

// busyTimeout is how long a read waits for v1 to finish writing (a
// variable for tests).
var busyTimeout = 5 * time.Second

// Read opens v1's database read-only and returns every lease in it, by
// instance_id. The database file is never written (SQLite's mode=ro, and
// query_only): a WAL-mode database being written by a running v1 is read
// as of its last commit, and a lock v1 holds is waited for (busyTimeout)
// before giving up with an error that says so. Reading a WAL-mode database
// leaves the -wal and -shm files any SQLite reader makes beside it, as v1's
// own connections do.
func Read(ctx context.Context, path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("reading v1's lease database: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("reading v1's lease database: %s is a folder, not a SQLite file", abs)
	}
	db, err := sql.Open(DriverName, dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("opening v1's lease database %s: %w", abs, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	out := &DB{Path: abs}
	// One read transaction: the schema and the rows are one snapshot.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, wrapErr(abs, err)
	}
	defer tx.Rollback()
	cols, err := columns(ctx, tx)
	if err != nil {
		return nil, wrapErr(abs, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s is not a SandboxForge v1 lease database: it has no leases table", abs)
	}
	var missing []string
	for _, c := range []string{"instance_id", "backend_name", "status", "expires_at"} {
		if !cols[c] {
			missing = append(missing, c)
		}
	}
	hasNew, hasLegacy := cols["backend_instance_name"], cols["lima_name"]
	if !hasNew && !hasLegacy {
		missing = append(missing, "backend_instance_name (or the legacy lima_name)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s is not a SandboxForge v1 lease database: its leases table has no %s",
			abs, strings.Join(missing, ", "))
	}
	switch {
	case hasNew && hasLegacy:
		out.Schema = Migrated
	case hasLegacy:
		out.Schema = Legacy
	default:
		out.Schema = Current
	}
	// Columns v1 added by migration may be absent from an old file: they
	// read as NULL.
	sel := make([]string, len(wanted))
	for i, c := range wanted {
		if cols[c] {
			sel[i] = `"` + c + `"`
		} else {
			sel[i] = "NULL"
		}
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM leases")
	if err != nil {
		return nil, wrapErr(abs, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals := make([]any, len(wanted))
		ptrs := make([]any, len(wanted))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, wrapErr(abs, err)
		}
		out.Leases = append(out.Leases, leaseFrom(vals))
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(abs, err)
	}
	slices.SortFunc(out.Leases, func(a, b Lease) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out, nil
}

// wanted are the columns read, in leaseFrom's order.
var wanted = []string{"instance_id", "backend_name", "backend_instance_name", "lima_name", "workspace_root",
	"workspace_id", "status", "created_at", "expires_at", "runtime_ready", "docker_command", "owner_session"}

func leaseFrom(v []any) Lease {
	l := Lease{
		InstanceID:    text(v[0]),
		Backend:       text(v[1]),
		WorkspaceRoot: text(v[4]),
		WorkspaceID:   text(v[5]),
		Status:        text(v[6]),
		RuntimeReady:  truthy(v[9]),
		DockerCommand: text(v[10]),
		OwnerSession:  text(v[11]),
	}
	// v1's migration: COALESCE(NULLIF(backend_instance_name, ''), lima_name).
	l.BackendInstance = text(v[2])
	if l.BackendInstance == "" {
		l.BackendInstance = text(v[3])
	}
	var err error
	if s := text(v[7]); s != "" {
		if l.CreatedAt, err = ParseTime(s); err != nil {
			l.Problems = append(l.Problems, "created_at: "+err.Error())
		}
	}
	if s := text(v[8]); s == "" {
		l.Problems = append(l.Problems, "expires_at is empty")
	} else if l.ExpiresAt, err = ParseTime(s); err != nil {
		l.Problems = append(l.Problems, "expires_at: "+err.Error())
	}
	return l
}

// text reads a column the way Python's str() would have written it. SQLite
// keeps whatever type was stored, whatever the column says.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// truthy reads runtime_ready as Python's bool() did: 0, NULL and empty are
// false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case int64:
		return x != 0
	case float64:
		return x != 0
	case bool:
		return x
	}
	s := strings.TrimSpace(strings.ToLower(text(v)))
	return s != "" && s != "0" && s != "false"
}

// ParseTime reads a v1 timestamp. v1 writes ISO 8601 UTC to the second
// with a Z (2026-03-26T08:00:00Z) and reads anything Python's
// datetime.fromisoformat accepts; this accepts fractional seconds, numeric
// offsets, a space instead of the T, and no zone (taken as UTC; v1 would
// have taken the host's zone, but never wrote one).
func ParseTime(s string) (time.Time, error) {
	t := strings.TrimSpace(s)
	if len(t) > 10 && (t[10] == ' ' || t[10] == 't') {
		t = t[:10] + "T" + t[11:]
	}
	if strings.HasSuffix(t, "z") {
		t = t[:len(t)-1] + "Z"
	}
	for _, layout := range []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999-0700",
		"2006-01-02T15:04:05.999999999-07",
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04",
		"2006-01-02",
	} {
		if p, err := time.Parse(layout, t); err == nil {
			return p.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 time", s)
}

// columns lists the leases table's columns (none: there is no such table).
func columns(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, "PRAGMA table_info(leases)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var (
			cid       int
			name, typ string
			notNull   int
			dflt      any
			pk        int
		)
		if err := rows.Scan(&cid, &name, &typ, &notNull, &dflt, &pk); err != nil {
			return nil, err
		}
		cols[strings.ToLower(name)] = true
	}
	return cols, rows.Err()
}

// dsn opens path read-only as a SQLite URI: SQLite never writes the
// database file in mode=ro, and query_only refuses writes on the
// connection besides. busy_timeout waits for a writer's lock.
func dsn(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x → /C:/x, as SQLite's URIs spell Windows paths
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: "mode=ro&_pragma=busy_timeout(" +
		strconv.Itoa(int(busyTimeout/time.Millisecond)) + ")&_pragma=query_only(1)"}
	return u.String()
}

// wrapErr says what failed and, when v1 holds a lock, what to do.
func wrapErr(abs string, err error) error {
	var se interface{ Code() int } // the driver's error (modernc.org/sqlite's *Error): an extended result code
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return fmt.Errorf("reading v1's lease database %s: it stayed locked for %s "+
				"(is v1 writing to it? stop v1 and retry): %w",
				abs, busyTimeout, err)
		case sqliteNotADB:
			return fmt.Errorf("%s is not a SQLite database: %w", abs, err)
		}
	}
	return fmt.Errorf("reading v1's lease database %s: %w", abs, err)
}
