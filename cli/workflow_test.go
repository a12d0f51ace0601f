package cli

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"

	"gopkg.in/yaml.v3"
)

// The gitops example's workflow, run step by step against the sim driver
// as a VM-capable runner would run it over a pull request's life.
func TestGitopsWorkflowOnSim(t *testing.T) {
	testutil.CoverSources(t) // it runs sbf without a helper that does
	wf := loadWorkflow(t, examplesDir+"/gitops/.github/workflows/sandboxes.yml")
	push, _ := wf.On["push"].(map[string]any)
	if _, ok := wf.On["pull_request"]; !ok || push == nil || !slices.Contains(push["branches"].([]any), any("main")) {
		t.Fatalf("the workflow must run on pull requests and on pushes to main: on = %v", wf.On)
	}
	config := t.TempDir()
	write(t, filepath.Join(config, "sandboxforge", "config.toml"), "[vm]\ndriver = \"sim\"\n")
	r := &runner{t: t, wf: wf, dir: copyExample(t, "gitops"), env: []string{
		"PATH=" + filepath.Dir(sbfBinary) + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"XDG_CONFIG_HOME=" + config, "SBF_STATE_HOME=" + t.TempDir(), policy.EnableSimVar + "=1",
	}}
	vars := map[string]string{"SBF_VM_RUNNER": "kvm"}
	pr, onMain := event{"pull_request", "refs/pull/7/merge", vars}, event{"push", "refs/heads/main", vars}

	runs := r.run(pr)
	expectJobs(t, "first pull request", runs, "validate ok", "plan ok", "apply skipped")
	expectPlan(t, runs, "2", "Changes pending")

	runs = r.run(onMain)
	expectJobs(t, "merge", runs, "validate ok", "plan ok", "apply ok")
	expectPlan(t, runs, "2", "Changes pending")
	runs = r.run(pr)
	expectJobs(t, "pull request after the merge", runs, "validate ok", "plan ok", "apply skipped")
	expectPlan(t, runs, "0", "No changes")
	expectJobs(t, "schedule", r.run(event{"schedule", "refs/heads/main", vars}), "validate ok", "plan ok",
		"apply ok")
	expectJobs(t, "no VM-capable runner", r.run(event{"push", "refs/heads/main", nil}), "validate ok",
		"plan skipped", "apply skipped")

	// Apply carries out the plan the plan job saved: when another apply
	// changed the state in between, it refuses the stale plan.
	r.beforeJob = func(job string) {
		if job == "apply" {
			r.sbf("apply", "--auto-approve", "--set", "sandboxes.qa.cpus=3")
		}
	}
	runs = r.run(onMain)
	expectJobs(t, "an apply between plan and apply", runs, "validate ok", "plan ok", "apply exit 1")
	if runs["apply"].failed != "Apply the saved plan" {
		t.Errorf("the apply job failed at %q", runs["apply"].failed)
	}
	r.beforeJob = nil

	r.env = append(r.env, "SBF_SIM_FAULTS=list:*=fail")
	runs = r.run(pr)
	expectJobs(t, "backend failing", runs, "validate ok", "plan exit 1", "apply skipped")
	expectPlan(t, runs, "1", "")
	r.env = r.env[:len(r.env)-1]

	specPath := filepath.Join(r.dir, ".sandboxforge.toml")
	b, _ := os.ReadFile(specPath)
	write(t, specPath, string(b)+"bogus = 1\n")
	expectJobs(t, "broken spec", r.run(onMain), "validate exit 1", "plan skipped", "apply skipped")
}

// sbf runs sbf in the runner's checkout, as another run on the machine.
func (r *runner) sbf(args ...string) {
	r.t.Helper()
	c := exec.Command(sbfBinary, args...)
	c.Dir, c.Env = r.dir, r.env
	if out, err := c.CombinedOutput(); err != nil {
		r.t.Fatalf("sbf %v: %v\n%s", args, err, out)
	}
}

// expectJobs compares each job's outcome with "JOB ok", "JOB skipped" or
// "JOB exit N".
func expectJobs(t *testing.T, when string, runs map[string]*jobRun, want ...string) {
	t.Helper()
	for _, w := range want {
		name, _, _ := strings.Cut(w, " ")
		got := name + " skipped"
		switch j := runs[name]; {
		case j == nil:
			got = name + " missing"
		case j.ran && j.exit == 0:
			got = name + " ok"
		case j.ran:
			got = name + " exit " + strconv.Itoa(j.exit)
		}
		if got != w {
			t.Errorf("%s: %s, want %s", when, got, w)
		}
	}
}

// expectPlan checks the plan step's exitcode output and its summary.
func expectPlan(t *testing.T, runs map[string]*jobRun, code, summary string) {
	t.Helper()
	plan := runs["plan"]
	if got := plan.outputs["plan"]["exitcode"]; got != code || !strings.Contains(plan.summary, summary) {
		t.Errorf("plan step: exitcode=%q summary %q, want %s and %q", got, plan.summary, code, summary)
	}
}

// The parts of a GitHub Actions workflow this runner understands; a
// workflow using anything else fails the test rather than being half run.
type workflow struct {
	On       map[string]any    `yaml:"on"`
	Env      map[string]string `yaml:"env"`
	Defaults struct {
		Run struct{ Shell string }
	}
	Jobs yaml.Node // a mapping: its order is the order jobs run in here
}

type workflowJob struct {
	If    string
	Needs any // a job name or a list of them
	Env   map[string]string
	Steps []workflowStep
}

type workflowStep struct {
	Name, ID, Uses, Run, If string
	Env                     map[string]string
	With                    map[string]string
}

// event is what triggered a run: the name, the ref and the repository
// variables.
type event struct {
	name, ref string
	vars      map[string]string
}

// jobRun is how a job ended: skipped, or the exit code of its last step.
type jobRun struct {
	ran     bool
	exit    int
	failed  string                       // the step that failed
	outputs map[string]map[string]string // step id → $GITHUB_OUTPUT
	summary string
}

func loadWorkflow(t *testing.T, path string) *workflow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if w.Defaults.Run.Shell != "bash" || w.Jobs.Kind != yaml.MappingNode {
		t.Fatalf("%s: want defaults.run.shell bash and a jobs mapping", path)
	}
	return &w
}

// runner runs a workflow's jobs as GitHub's runner would run them in one
// checkout that keeps its ignored files (clean: false).
type runner struct {
	t   *testing.T
	wf  *workflow
	dir string   // the checkout
	env []string // the machine's: sbf on PATH, the sim driver in its config
	// artifacts holds a workflow run's artifacts, by name.
	artifacts string
	// beforeJob, when set, runs before each job that runs (another run
	// on the machine meanwhile).
	beforeJob func(job string)
}

func (r *runner) run(ev event) map[string]*jobRun {
	r.t.Helper()
	runs := map[string]*jobRun{}
	r.artifacts = r.t.TempDir()
	for i := 0; i+1 < len(r.wf.Jobs.Content); i += 2 {
		name := r.wf.Jobs.Content[i].Value
		var job workflowJob
		if err := r.wf.Jobs.Content[i+1].Decode(&job); err != nil {
			r.t.Fatalf("job %s: %v", name, err)
		}
		runs[name] = &jobRun{outputs: map[string]map[string]string{}}
		if !r.needsSucceeded(job.Needs, runs) || !r.eval(job.If, ev) {
			continue
		}
		runs[name].ran = true
		if r.beforeJob != nil {
			r.beforeJob(name)
		}
		r.runJob(name, job, ev, runs[name])
	}
	return runs
}

func (r *runner) needsSucceeded(needs any, runs map[string]*jobRun) bool {
	var names []string
	switch n := needs.(type) {
	case string:
		names = []string{n}
	case []any:
		for _, v := range n {
			names = append(names, v.(string))
		}
	}
	for _, n := range names {
		if j := runs[n]; j == nil || !j.ran || j.exit != 0 {
			return false
		}
	}
	return true
}

var condition = regexp.MustCompile(`^\s*([\w.]+)\s*(==|!=)\s*'([^']*)'\s*$`)

// eval evaluates the conditions the workflow uses: comparisons of the
// event name, the ref and repository variables, joined by &&.
func (r *runner) eval(expr string, ev event) bool {
	if expr == "" {
		return true
	}
	for _, term := range strings.Split(expr, "&&") {
		m := condition.FindStringSubmatch(term)
		if m == nil {
			r.t.Fatalf("this runner cannot evaluate %q", expr)
		}
		var v string
		switch name, isVar := strings.CutPrefix(m[1], "vars."); {
		case isVar:
			v = ev.vars[name]
		case m[1] == "github.event_name":
			v = ev.name
		case m[1] == "github.ref":
			v = ev.ref
		default:
			r.t.Fatalf("this runner does not know %s in %q", m[1], expr)
		}
		if (v == m[3]) != (m[2] == "==") {
			return false
		}
	}
	return true
}

// The actions the workflow uses that this runner stands in for: the
// checkout is r.dir, Go is only needed when sbf is not on PATH, and
// artifacts are files kept for the jobs after (artifact).
var knownActions = []string{"actions/checkout", "actions/setup-go", "actions/upload-artifact",
	"actions/download-artifact"}

// artifact stands in for upload-artifact (a file of the checkout, kept
// under its name) and download-artifact (back into the checkout); false
// when the artifact to download was never uploaded.
func (r *runner) artifact(st workflowStep) bool {
	action, _, _ := strings.Cut(st.Uses, "@")
	kept := filepath.Join(r.artifacts, st.With["name"])
	switch action {
	case "actions/upload-artifact":
		data, err := os.ReadFile(filepath.Join(r.dir, st.With["path"]))
		if err != nil {
			return false
		}
		write(r.t, filepath.Join(kept, filepath.Base(st.With["path"])), string(data))
	case "actions/download-artifact":
		entries, err := os.ReadDir(kept)
		if err != nil {
			return false
		}
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(kept, e.Name()))
			write(r.t, filepath.Join(r.dir, st.With["path"], e.Name()), string(data))
		}
	}
	return true
}

func (r *runner) runJob(name string, job workflowJob, ev event, run *jobRun) {
	r.t.Helper()
	tmp := r.t.TempDir()
	var path []string // $GITHUB_PATH, newest first
	env := map[string]string{"GITHUB_EVENT_NAME": ev.name, "GITHUB_REF": ev.ref, "CI": "true", "RUNNER_TEMP": tmp}
	for _, layer := range []map[string]string{r.wf.Env, job.Env} {
		for k, v := range layer {
			env[k] = v
		}
	}
	for i, st := range job.Steps {
		if st.If != "" {
			r.t.Fatalf("job %s step %d: step conditions are not simulated", name, i)
		}
		if st.Uses != "" {
			if action, _, _ := strings.Cut(st.Uses, "@"); !slices.Contains(knownActions, action) {
				r.t.Fatalf("job %s: this runner cannot stand in for %s", name, st.Uses)
			}
			if !r.artifact(st) {
				run.exit, run.failed = 1, st.Uses
				return
			}
			continue
		}
		if strings.Contains(st.Run, "${{") {
			r.t.Fatalf("job %s step %q: expressions in run: are not simulated", name, st.Name)
		}
		files := map[string]string{}
		for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_PATH"} {
			files[f] = filepath.Join(tmp, f+"-"+strconv.Itoa(i))
			write(r.t, files[f], "")
			env[f] = files[f]
		}
		code := r.runStep(st, env, path)
		run.outputs[st.ID] = readKeyValues(r.t, files["GITHUB_OUTPUT"])
		b, _ := os.ReadFile(files["GITHUB_STEP_SUMMARY"])
		run.summary += string(b)
		for _, p := range readLines(r.t, files["GITHUB_PATH"]) {
			path = append([]string{p}, path...)
		}
		if code != 0 {
			run.exit, run.failed = code, st.Name
			return
		}
	}
}

// runStep runs a run: step the way `shell: bash` does.
func (r *runner) runStep(st workflowStep, env map[string]string, path []string) int {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", st.Run)
	c.Dir = r.dir
	c.Env = slices.Clone(r.env)
	for _, layer := range []map[string]string{env, st.Env} {
		for k, v := range layer {
			c.Env = append(c.Env, k+"="+v)
		}
	}
	if len(path) > 0 {
		c.Env = append(c.Env, "PATH="+strings.Join(path, ":")+":"+lookupEnv(c.Env, "PATH"))
	}
	out, err := c.CombinedOutput()
	r.t.Logf("step %q:\n%s", st.Name, out)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		r.t.Fatalf("step %q: %v", st.Name, err)
	}
	return 0
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

func readKeyValues(t *testing.T, path string) map[string]string {
	kv := map[string]string{}
	for _, line := range readLines(t, path) {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE (multi-line outputs are not simulated)", path, line)
		}
		kv[k] = v
	}
	return kv
}
