package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const canary = "Sup3rS3cretCanary"

// canarySpec plants the canary in every secret-bearing key: the MySQL root
// password, extra_env values whose names look secret, and credentials in
// a connection URL.
const canarySpec = `[vm]
driver = "sim"
[infra.mysql]
root_password = "` + canary + `-root"
extra_env = { MYSQL_PASSWORD = "` + canary + `-pw", DATABASE_URL = "mysql://app:` + canary +
	`-url@db:3306/app", TZ = "UTC" }
[infra.redis]
extra_env = { REDIS_PASSWORD = "` + canary + `-redis", API_TOKEN = "` + canary + `-token" }
[sandboxes.api]
[sandboxes.db]
services = ["mysql", "redis"]
[pool.warm]
size = 1
`

// noWorkspace commands take --json but read no workspace configuration
// of the folder they run in (import-v1 reads v1's workspaces, named in
// its database; service status, the service manager's file), so no secret
// can reach them.
var noWorkspace = map[string]bool{"sbf version": true, "sbf service status": true,
	"sbf image build": true, "sbf image list": true, "sbf import-v1": true}

// Every command, as text and as --json, and every file sbf writes
// outside the app's own .env, is free of the planted secrets.
func TestNoCommandOutputCarriesASecret(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	dir := t.TempDir()
	host := filepath.Join(t.TempDir(), "host")
	write(t, filepath.Join(dir, ".sandboxforge.toml"), canarySpec)
	write(t, filepath.Join(dir, "src.txt"), "x")
	env := map[string]string{"SBF_STATE_HOME": host, "NO_COLOR": "1"}
	set := "--set=infra.mysql.root_password=" + canary + "-set"
	covered := map[string]bool{}
	taskID := ""
	root := (&app{getenv: func(string) string { return "" }}).rootCommand()
	for _, args := range [][]string{
		{"validate"}, {"validate", "--json"}, {"validate", "--json", set}, {"validate", set}, {"validate", "--show", set},
		{"plan"}, {"plan", "--json"}, {"plan", "--json", set},
		{"apply", "--auto-approve"}, {"apply", "--auto-approve", "--json", set},
		{"status"}, {"status", "--json"},
		{"pool", "fill"}, {"pool", "fill", "--json"}, {"pool", "status"}, {"pool", "status", "--json"},
		{"pool", "drain", "--auto-approve"}, {"pool", "drain", "--auto-approve", "--json"},
		{"up", "--auto-approve", "--new", "scratch"}, {"up", "--new", "scratch2", "--json"},
		{"extend", "api", "10m"}, {"extend", "api", "10m", "--json"},
		{"exec", "api", "--", "true"}, {"exec", "api", "--json", "--", "true"},
		{"cp", filepath.Join(dir, "src.txt"), "api:/tmp/x"},
		{"cat", "api:/tmp/x"}, {"ls", "api:/"}, {"ls", "--json", "api:/"}, {"history"}, {"history", "--json"},
		{"stats"}, {"stats", "--json"}, {"health"}, {"health", "--json"},
		{"sync", "api", dir, "/tmp/ws"}, {"sync", "api", dir, "/tmp/ws", "--json"},
		{"task", "start", "--json", "api", "--", "env"}, {"task", "status", "ID"}, {"task", "status", "ID", "--json"},
		{"task", "logs", "ID"}, {"task", "logs", "ID", "--json"}, {"task", "list"}, {"task", "list", "--json"},
		{"logs", "ID"}, {"logs", "ID", "--json"}, // docker's word for task logs
		{"task", "stop", "ID", "--json"}, {"task", "start", "api", "--", "sleep", "1"},
		{"egress", "log", "api"}, {"egress", "log", "api", "--json"},
		{"snapshot", "create", "api", "s1"}, {"snapshot", "create", "api", "s2", "--json"},
		{"snapshot", "list", "api"}, {"snapshot", "list", "api", "--json"},
		{"snapshot", "restore", "api", "s1"}, {"snapshot", "restore", "api", "s1", "--json"},
		{"snapshot", "export", "api", "s1", filepath.Join(dir, "s1.export")},
		{"snapshot", "export", "api", "s2", filepath.Join(dir, "s2.export"), "--json"},
		{"snapshot", "import", "api", "s3", filepath.Join(dir, "s1.export")},
		{"snapshot", "import", "api", "s4", filepath.Join(dir, "s2.export"), "--json"},
		{"snapshot", "delete", "api", "s2"}, {"snapshot", "delete", "api", "s1", "--json"},
		{"clone", "db"}, {"clone", "db", "--json"},
		{"fork", "db"}, {"fork", "db", "--json"},
		{"reconcile"}, {"reconcile", "--json"},
		{"schema"}, {"doctor"}, {"doctor", "--json"},
		{"destroy", "scratch", "--auto-approve"}, {"destroy", "--auto-approve", "--json"},
	} {
		c, _, err := root.Find(args)
		if err != nil || c == root {
			continue // a command this build does not have
		}
		covered[c.CommandPath()] = true
		if args[0] == "task" && len(args) > 2 && args[2] == "ID" {
			args = append(append([]string{}, args[:2]...), append([]string{taskID}, args[3:]...)...)
		}
		if args[0] == "logs" && args[1] == "ID" {
			args = append([]string{"logs", taskID}, args[2:]...)
		}
		r := sbf(t, env, append([]string{"-C", dir}, args...)...)
		if args[0] == "task" && args[1] == "start" {
			var task struct {
				ID string `json:"task_id"`
			}
			if json.Unmarshal([]byte(r.stdout), &task) == nil && task.ID != "" {
				taskID = task.ID
			}
		}
		if r.code == 2 {
			t.Errorf("sbf %s: usage error: %s", strings.Join(args, " "), r.stderr)
		}
		if out := r.stdout + r.stderr; strings.Contains(out, canary) {
			t.Errorf("sbf %s (exit %d) shows a secret:\n%s", strings.Join(args, " "), r.code, out)
		}
	}
	for _, root := range []string{filepath.Join(dir, ".sandboxforge"), host} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if data, _ := os.ReadFile(path); strings.Contains(string(data), canary) {
				t.Errorf("%s holds a secret", path)
			}
			return nil
		})
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil && !covered[c.CommandPath()] && !noWorkspace[c.CommandPath()] {
			t.Errorf("%s takes --json but the canary test does not run it", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// A secret of the wrong type is reported by key, never quoted.
func TestInvalidSecretsAreNotQuoted(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"),
		"[infra.mysql]\nroot_password = 987654321\nextra_env = { MYSQL_PASSWORD = 123456789 }\n")
	for _, args := range [][]string{{"validate"}, {"validate", "--json"}, {"plan", "--json"}} {
		r := sbf(t, nil, append([]string{"-C", dir}, args...)...)
		out := r.stdout + r.stderr
		if r.code == 0 || !strings.Contains(out, "root_password") || strings.Contains(out, "987654321") ||
			strings.Contains(out, "123456789") {
			t.Errorf("sbf %v: exit %d\n%s", args, r.code, out)
		}
	}
}
