package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/spec"
)

func simDir(t *testing.T, specText string) string {
	dir := t.TempDir()
	write(t, filepath.Join(dir, spec.FileName), specText)
	return dir
}

func TestPlanJSON(t *testing.T) {
	dir := simDir(t, simSpec)
	r := sbf(t, nil, "plan", "-C", dir, "--json", "--detailed-exitcode")
	var rep struct {
		Changes []struct{ Sandbox, Action, Cause string }
		Summary struct{ Add, Change, Destroy int }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if r.code != 2 || len(rep.Changes) != 2 || rep.Changes[0].Sandbox != "api" || rep.Changes[0].Action != "create" ||
		rep.Changes[0].Cause != "not found" || rep.Summary.Add != 2 {
		t.Errorf("exit %d, report %+v", r.code, rep)
	}
}

func TestApplyWithoutTerminalNeedsAutoApprove(t *testing.T) {
	dir := simDir(t, simSpec)
	r := sbf(t, nil, "apply", "-C", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "--auto-approve") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r := sbf(t, nil, "status", "-C", dir, "--json"); !strings.Contains(r.stdout, `"phase": "pending"`) {
		t.Errorf("something was created without confirmation:\n%s", r.stdout)
	}
}

func TestPlanOutAndApplyPlanFile(t *testing.T) {
	dir := simDir(t, simSpec)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	env := map[string]string{"HOME": t.TempDir()}
	if r := sbf(t, env, "plan", "-C", dir, "--out", planFile); r.code != 0 {
		t.Fatalf("plan --out: %d %s", r.code, r.stderr)
	}
	if r := sbf(t, env, "apply", "-C", dir, planFile); r.code != 0 ||
		!strings.Contains(r.stdout, "Apply complete: 2 added") {
		t.Fatalf("apply PLANFILE: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "apply", "-C", dir, planFile); r.code != 1 ||
		!strings.Contains(r.stderr, "saved plan is stale") {
		t.Errorf("reapplying a used plan: %d %s", r.code, r.stderr)
	}
}

func TestUpExtendDestroy(t *testing.T) {
	dir := simDir(t, simSpec+"[lease]\nmax_ttl = \"1h\"\n")
	env := map[string]string{"HOME": t.TempDir(), "SBF_NOW": "2026-11-25T12:00:00Z"}
	if r := sbf(t, env, "up", "--auto-approve", "-C", dir, "--new", "scratch", "--ttl", "20m"); r.code != 0 {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	r := sbf(t, env, "extend", "-C", dir, "scratch", "3h", "--json")
	var rep struct {
		Error struct {
			Code    string `json:"error_code"`
			Details map[string]any
		}
	}
	json.Unmarshal([]byte(r.stdout), &rep)
	if r.code != 1 || rep.Error.Code != "TTL_INVALID" || rep.Error.Details["max_ttl_minutes"] != 60.0 {
		t.Errorf("extend past max_ttl: exit %d\n%s", r.code, r.stdout)
	}
	if r := sbf(t, env, "extend", "-C", dir, "scratch", "30m"); r.code != 0 {
		t.Fatalf("extend: %d %s", r.code, r.stderr)
	}
	r = sbf(t, env, "status", "-C", dir, "--json")
	if !strings.Contains(r.stdout, `"expires_at": "2026-11-25T12:50:00Z"`) {
		t.Errorf("status after extend:\n%s", r.stdout)
	}
	if r := sbf(t, env, "destroy", "-C", dir, "scratch", "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "1 destroyed") {
		t.Fatalf("destroy: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "extend", "-C", dir, "scratch", "10m"); r.code != 1 ||
		!strings.Contains(r.stderr, "is destroyed") {
		t.Errorf("extend after destroy: %d %s", r.code, r.stderr)
	}
	if r := sbf(t, env, "extend", "-C", dir, "scratch", "soon"); r.code != 2 {
		t.Errorf("bad duration: exit %d", r.code)
	}
}

func TestInvalidSpecStopsBeforeAnyDriver(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\ncpus = 0\n[sandboxes.api]\n")
	r := sbf(t, nil, "plan", "-C", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "cpus") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r := sbf(t, nil, "plan", "-C", dir, "--json"); !strings.Contains(r.stdout,
		`"error_code": "WORKSPACE_CONFIG_INVALID"`) {
		t.Errorf("--json error:\n%s", r.stdout)
	}
	if _, err := os.Stat(inProcessSimWorld(t, dir)); err == nil {
		t.Error("the sim driver was opened for an invalid spec")
	}
}

func TestBadSBFNow(t *testing.T) {
	dir := simDir(t, simSpec)
	if r := sbf(t, map[string]string{"SBF_NOW": "tomorrow"}, "plan", "-C", dir); r.code != 1 ||
		!strings.Contains(r.stderr, "RFC 3339") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBrokenComposeFileFailsPlanBeforeAnyVM(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\ncompose = true\n")
	write(t, filepath.Join(dir, "compose.yaml"), "services:\n  web:\n    image: nginx\n   ports: [\"80:80\"]\n")
	r := sbf(t, nil, "plan", "-C", dir)
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(dir, "compose.yaml")) {
		t.Errorf("plan: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, spec.Dir)); err == nil {
		t.Error("plan created state or touched a driver for a broken compose file")
	}
	v := sbf(t, nil, "validate", "-C", dir, "--json")
	if v.code != 1 || !strings.Contains(v.stdout, `"key": "compose"`) || !strings.Contains(v.stdout, "compose.yaml") {
		t.Errorf("validate: exit %d\n%s", v.code, v.stdout)
	}
}

func TestApplyWithoutABackendSaysWhatToDo(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"lima\"\n[sandboxes.hello]\n")
	r := sbf(t, map[string]string{"SBF_LIMACTL": filepath.Join(t.TempDir(), "limactl"), "PATH": "/nonexistent"},
		"apply", "-C", dir, "--auto-approve")
	if r.code != 1 || strings.Contains(r.stdout, "match the configuration") ||
		!strings.Contains(r.stdout, "Nothing was changed") {
		t.Errorf("exit %d\nstdout:\n%s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, spec.Dir)); !os.IsNotExist(err) {
		t.Errorf("the failed apply wrote %s (a lease, state): %v", spec.Dir, err)
	}
	if !strings.Contains(r.stderr, "lima driver unavailable") || !strings.Contains(r.stderr, "next:") {
		t.Errorf("no guidance:\n%s", r.stderr)
	}
	j := sbf(t, map[string]string{"SBF_LIMACTL": filepath.Join(t.TempDir(), "limactl")}, "apply", "-C", dir,
		"--auto-approve", "--json")
	if !strings.Contains(j.stdout, `"error_code": "BACKEND_UNAVAILABLE"`) ||
		!strings.Contains(j.stdout, `"next_steps"`) {
		t.Errorf("--json:\n%s", j.stdout)
	}
}

// A lease end hand-edited past the bounds is clamped at load; apply says
// so on stderr and in --json.
func TestApplyReportsClampedLeases(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %s", r.stderr)
	}
	managed := filepath.Join(dir, spec.Dir, "overrides.toml")
	data, err := os.ReadFile(managed)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`expires_at = \S+`).ReplaceAllString(string(data), "expires_at = 2099-01-01T00:00:00Z")
	write(t, managed, edited)
	r := sbf(t, env, "apply", "-C", dir, "--auto-approve")
	if r.code != 0 || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "leases.api.expires_at") {
		t.Errorf("text: exit %d, stderr %q", r.code, r.stderr)
	}
	write(t, managed, edited)
	if p := sbf(t, env, "plan", "-C", dir); !strings.Contains(p.stderr, "leases.api.expires_at") {
		t.Errorf("plan: stderr %q", p.stderr)
	}
	j := sbf(t, env, "plan", "-C", dir, "--json")
	a := sbf(t, env, "apply", "-C", dir, "--auto-approve", "--json")
	if !strings.Contains(a.stdout, `"warnings"`) || !strings.Contains(a.stdout, "leases.api.expires_at") {
		t.Errorf("--json: %s\n(plan: %s)", a.stdout, j.stdout)
	}
}

// sbf up refuses a VM the host cannot hold, as create_instance does, and
// writes nothing: the check belongs to the engine, not to one front door.
func TestUpRefusesAVMTheHostCannotHold(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\ncpus = 4096\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	r := sbf(t, env, "up", "--auto-approve", "--new", "big", "-C", dir, "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"error_code": "INSUFFICIENT_HOST_RESOURCES"`) ||
		!strings.Contains(r.stdout, `"suggested_vm"`) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, spec.Dir, "overrides.toml")); strings.Contains(string(data), "big") {
		t.Errorf("the refused sandbox was written down:\n%s", data)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, spec.Dir, "sim", "instances")); len(entries) != 0 {
		t.Errorf("instances were created: %v", entries)
	}
}

// A create that fails is rolled back by sbf up: no lease is left to
// retry it forever, and the record says what happened.
func TestUpRollsBackAFailedCreate(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_SIM_FAULTS": "create:*=fail"}
	if r := sbf(t, env, "up", "--auto-approve", "--new", "scratch", "-C", dir); r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, spec.Dir, "overrides.toml")); strings.Contains(string(data),
		"[leases.scratch]") {
		t.Errorf("the failed sandbox keeps its lease:\n%s", data)
	}
}

// Like git and compose, sbf finds the workspace from a subfolder; where
// there is none, workspace commands say so, exit 1 and create nothing.
func TestWorkspaceIsFoundFromBelowOrNotAtAll(t *testing.T) {
	dir := simDir(t, simSpec)
	sub := filepath.Join(dir, "src", "deep")
	os.MkdirAll(sub, 0o755)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	t.Chdir(sub)
	if r := sbf(t, env, "plan", "--detailed-exitcode"); r.code != 2 || !strings.Contains(r.stdout, "+ api") {
		t.Errorf("plan from %s: exit %d\n%s%s", sub, r.code, r.stdout, r.stderr)
	}
	empty := t.TempDir()
	for _, command := range []string{"plan", "apply", "status", "up", "destroy"} {
		args := []string{command, "-C", empty}
		if command == "apply" || command == "destroy" || command == "up" {
			args = append(args, "--auto-approve")
		}
		r := sbf(t, env, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no .sandboxforge.toml in "+empty) ||
			!strings.Contains(r.stderr, "sbf init") {
			t.Errorf("%s in an empty folder: exit %d, %q", command, r.code, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("created in the empty folder: %v", entries)
	}
	if r := sbf(t, env, "validate", "-C", empty); r.code != 0 {
		t.Errorf("validate of an empty folder (the defaults): exit %d %s", r.code, r.stderr)
	}
}

// A flag a command would ignore is not offered: asking for it is a usage
// error, not a silent no-op.
func TestFlagsOnlyWhereTheyAct(t *testing.T) {
	dir := simDir(t, simSpec)
	for _, args := range [][]string{
		{"plan", "--parallelism", "2"}, {"status", "--parallelism", "2"}, {"extend", "api", "1h", "--parallelism", "2"},
		{"destroy", "--set", "vm.cpus=2"},
	} {
		if r := sbf(t, nil, append(args, "-C", dir)...); r.code != 2 || !strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"plan", "--set", "vm.cpus=2", "--lock-timeout", "1s"}, {"status",
		"--lock-timeout", "1s"}} {
		if r := sbf(t, nil, append(args, "-C", dir)...); r.code != 0 {
			t.Errorf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
}

// up, extend and destroy say what they did to the lease, not "No changes".
func TestLeaseCommandsReportWhatTheyDid(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_NOW": "2026-11-26T10:00:00Z"}
	if r := sbf(t, env, "up", "--auto-approve", "api", "-C", dir, "--ttl", "1h"); r.code != 0 ||
		!strings.Contains(r.stdout, "api: lease acquired until 2026-11-26T11:00:00Z (in 1h).") {
		t.Errorf("up: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := sbf(t, env, "extend", "api", "30m", "-C", dir)
	if r.code != 0 || strings.Contains(r.stdout, "No changes") ||
		!strings.Contains(r.stdout, "api: lease extended until 2026-11-26T11:30:00Z (in 1h30m).") {
		t.Errorf("extend: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "destroy", "api", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "api: lease dropped; its VM is deleted.") {
		t.Errorf("destroy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// sbf task: start a detached command, read its output, stop it.
func TestTaskCommands(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbf(t, env, "task", "start", "-C", dir, "--json", "api", "--", "sh", "-c", "echo up; sleep 60")
	var task struct {
		ID     string `json:"task_id"`
		Status string
	}
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil || task.Status != "running" {
		t.Fatalf("start: %v %s %s", err, r.stdout, r.stderr)
	}
	var logs result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if logs = sbf(t, env, "task", "logs", "-C", dir, task.ID); logs.stdout == "up\n" {
			break
		}
	}
	if logs.stdout != "up\n" {
		t.Errorf("logs: %q %q", logs.stdout, logs.stderr)
	}
	if r := sbf(t, env, "task", "stop", "-C", dir, task.ID); r.code != 0 ||
		!strings.Contains(r.stdout, "stopped (exit -15)") {
		t.Errorf("stop: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "task", "list", "-C", dir); !strings.Contains(r.stdout, task.ID) {
		t.Errorf("list: %q", r.stdout)
	}
	if r := sbf(t, env, "task", "stop", "-C", dir, task.ID); r.code != 1 ||
		!strings.Contains(r.stderr, "already finished") {
		t.Errorf("second stop: %d %q", r.code, r.stderr)
	}
}
