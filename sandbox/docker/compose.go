package docker

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/internal/shellquote"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
)

// ComposeRequest is one docker_compose call, in v1's parameters.
type ComposeRequest struct {
	ProjectDir string
	Action     string
	File       string
	Services   []string
	Detach     bool
	Command    string
	Follow     bool
	Since      string
	Tail       *int
}

// ComposeResult is what a docker_compose call did.
type ComposeResult struct {
	DockerResult
	Action        string
	Bridge        map[string]any    // v1's bridge to the services' network
	ConnectionEnv map[string]string // the services' variables, secrets redacted
	Engine        *EngineCompose    // set when the engine converged its own stack
	Warnings      []string
}

// EngineCompose is the engine's convergence of a sandbox's [compose]
// stack, run for up and restart.
type EngineCompose struct {
	Project   string      `json:"project"`
	Dir       string      `json:"project_dir"` // the shipped bundle, relative to the guest user's home
	Converged bool        `json:"converged"`   // the plan had a compose step: up ran
	Restarted bool        `json:"restarted"`   // an already converged stack was restarted
	Plan      plan.Report `json:"plan"`
}

// composeStack is the engine's compose project of a sandbox in the guest.
type composeStack struct{ project, dir string }

// Compose runs a docker_compose call the engine does not converge: v1's
// command line in project_dir (the engine's own bundle folder when
// project_dir names that stack). Up and restart of the engine's stack
// (EngineOwned) are the engine's: the door asks it, then AfterEngineUp.
func Compose(ctx context.Context, t *sandbox.Target, req ComposeRequest) (ComposeResult, error) {
	if EngineOwned(t, req) {
		return ComposeResult{}, coded.New(coded.InvalidArguments, map[string]any{"action": req.Action},
			"%s of sandbox %s's [compose] stack is converged by the engine, not run as a command", req.Action, t.Sandbox)
	}
	d, err := For(ctx, t)
	if err != nil {
		return ComposeResult{}, err
	}
	if stack, owned := engineStack(t, req.ProjectDir, req.File); owned {
		return d.compose(ctx, req, ComposeSpec{Project: stack.project, File: "compose.yaml"}, stack.dir)
	}
	return d.compose(ctx, req, ComposeSpec{File: req.File}, req.ProjectDir)
}

// EngineOwned says whether a call is up or restart of the stack the
// engine converges for the sandbox ([compose], compose = true): the data
// plane never converges anything itself, so the door asks the engine.
func EngineOwned(t *sandbox.Target, req ComposeRequest) bool {
	action := strings.ToLower(strings.TrimSpace(req.Action))
	_, owned := engineStack(t, req.ProjectDir, req.File)
	return owned && (action == "up" || action == "restart")
}

// engineStack says whether project_dir (and file) name the stack the
// engine converges for the sandbox: its bundle folder in the guest, or
// the host folder its compose files are read from.
func engineStack(t *sandbox.Target, projectDir, file string) (composeStack, bool) {
	r := t.Resolved
	project := guest.ProjectName(t.Sandbox)
	st := composeStack{project: project, dir: guest.RemoteDir(project)}
	if !r.Config.Sandboxes[t.Sandbox].Compose {
		return st, false
	}
	hostDir := r.Root
	if pd := r.Config.Compose.ProjectDirectory; pd != "" {
		hostDir = hostJoin(r.Root, pd)
	}
	pd := strings.TrimSuffix(strings.TrimSpace(projectDir), "/")
	guestDirs := []string{st.dir, "~/" + st.dir, "$HOME/" + st.dir, "${HOME}/" + st.dir}
	named := slices.Contains(guestDirs, pd) ||
		filepath.IsAbs(pd) && (filepath.Clean(pd) == r.Root || filepath.Clean(pd) == hostDir)
	return st, named && stackFile(t, file, hostDir)
}

// stackFile: no file, the bundle's compose.yaml, or one of [compose]
// files (as written, or as a host path).
func stackFile(t *sandbox.Target, file, hostDir string) bool {
	if file == "" || file == "compose.yaml" {
		return true
	}
	for _, f := range t.Resolved.Config.Compose.Files {
		p := hostJoin(t.Resolved.Root, f)
		if file == f || filepath.Clean(file) == p || hostJoin(hostDir, file) == p {
			return true
		}
	}
	return false
}

func hostJoin(root, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p)
}

// compose runs v1's compose command line with the services' connection
// variables exported, then bridges what up or restart started onto the
// services' network.
func (d *Docker) compose(
	ctx context.Context,
	req ComposeRequest,
	base ComposeSpec,
	workdir string,
) (ComposeResult, error) {
	action, err := NormalizeComposeAction(req.Action)
	if err != nil {
		return ComposeResult{}, err
	}
	cs := base
	cs.Action, cs.Services, cs.Detach, cs.Command = action, req.Services, req.Detach, req.Command
	cs.Follow, cs.Since, cs.Tail = req.Follow, req.Since, req.Tail
	args, err := ComposeArgs(cs)
	if err != nil {
		return ComposeResult{}, err
	}
	env, secrets, err := d.connectionEnv(ctx)
	if err != nil {
		return ComposeResult{}, err
	}
	c := call{Timeout: dockerRun, Workdir: workdir, Env: env, Secrets: secrets}
	if action == "logs" && req.Follow {
		c.Timeout, c.TimeoutIsEnd = dockerFollow, true
	}
	res, err := d.run(ctx, d.line(args), c)
	if err != nil {
		return ComposeResult{}, err
	}
	out := ComposeResult{
		DockerResult:  res,
		Action:        action,
		Bridge:        map[string]any{"status": "skipped"},
		ConnectionEnv: guest.Redacted(env),
	}
	if (action == "up" || action == "restart") && d.target.Resolved.Config.Infra.BridgeToComposeNetwork {
		if out.Bridge, err = d.bridge(ctx, cs, workdir); err != nil {
			return ComposeResult{}, err
		}
	}
	return out, nil
}

// connectionEnv is v1's: the variables of the sandbox's service
// containers that exist in the guest (their values, for the command) and
// the secret values among them (scrubbed from its output).
func (d *Docker) connectionEnv(ctx context.Context) (map[string]string, []string, error) {
	r, sandbox := d.target.Resolved, d.target.Sandbox
	infra := r.Config.Infra
	containers := map[string]string{}
	if infra.MySQL.Enabled {
		containers["mysql"] = guest.MySQLContainer(infra, sandbox)
	}
	if infra.Redis.Enabled {
		containers["redis"] = guest.RedisContainer(infra, sandbox)
	}
	var script []string
	for _, svc := range slices.Sorted(maps.Keys(containers)) {
		script = append(script, d.line([]string{"inspect", "-f", "{{.State.Running}}", containers[svc]})+
			" >/dev/null 2>&1 && echo "+shellquote.Word(svc))
	}
	var present []string
	if len(script) > 0 {
		res, err := d.exec(ctx, probeReq(strings.Join(script, "; ")+"; true"))
		if err != nil {
			return nil, nil, err
		}
		present = strings.Fields(res.Stdout)
	}
	env, err := guest.ConnectionEnv(infra, sandbox, present, d.target.Env)
	if err != nil {
		return nil, nil, coded.New(
			coded.ConfigInvalid,
			map[string]any{"workspace_root": r.Root, "errors": []string{err.Error()}},
			"connection variables of sandbox %s: %v",
			sandbox,
			err,
		)
	}
	shown := guest.Redacted(env)
	var secrets []string
	for k, v := range env {
		if shown[k] != v {
			secrets = append(secrets, v)
		}
	}
	return env, secrets, nil
}

// AfterEngineUp is the answer to an EngineOwned call once the engine has
// converged the sandbox (its compose step ran `up -d --remove-orphans`
// when the stack differed from the files): a restart of a stack that was
// already converged restarts its containers. start is when the call began.
func AfterEngineUp(ctx context.Context, t *sandbox.Target, req ComposeRequest, conv sandbox.Converged,
	start time.Time) (ComposeResult, error) {
	action := strings.ToLower(strings.TrimSpace(req.Action))
	st, _ := engineStack(t, req.ProjectDir, req.File)
	p := conv.Plan
	out := ComposeResult{Action: action, ConnectionEnv: conv.ConnectionEnv, Bridge: engineBridge(conv.Network),
		DockerResult: DockerResult{Command: "sbf apply --target " + t.Sandbox}, Warnings: engineWarnings(action, req),
		Engine: &EngineCompose{Project: st.project, Dir: st.dir, Plan: p.Report(),
			Converged: slices.ContainsFunc(p.Actions, func(a plan.Action) bool {
				return a.Sandbox == t.Sandbox && a.Kind == plan.Compose
			})}}
	var text bytes.Buffer
	p.Render(&text, plan.Style{})
	if action == "restart" && !out.Engine.Converged {
		var err error
		if out.DockerResult, err = restartStack(ctx, t, st, req.Services); err != nil {
			return ComposeResult{}, err
		}
		out.Command = "sbf apply --target " + t.Sandbox + " && " + out.Command
		out.Engine.Restarted = true
	}
	out.Stdout = text.String() + out.Stdout
	out.DurationMS = t.Clock.Now().Sub(start).Milliseconds()
	return out, nil
}

func restartStack(ctx context.Context, t *sandbox.Target, st composeStack, services []string) (DockerResult, error) {
	d, err := For(ctx, t)
	if err != nil {
		return DockerResult{}, err
	}
	args, err := ComposeArgs(ComposeSpec{Project: st.project, File: "compose.yaml", Action: "restart", Services: services})
	if err != nil {
		return DockerResult{}, err
	}
	return d.run(ctx, d.line(args), call{Timeout: dockerRun, Workdir: st.dir})
}

// engineBridge: the engine's stack joins the services' network in its
// own compose file, so nothing is connected after the fact.
func engineBridge(network string) map[string]any {
	if network == "" {
		return map[string]any{"status": "skipped"}
	}
	return map[string]any{"status": "ok", "network": network, "network_status": "existing", "joined_by": "compose file"}
}

func engineWarnings(action string, req ComposeRequest) []string {
	w := []string{}
	if action == "up" && len(req.Services) > 0 {
		w = append(w, "services ignored: the engine converges the whole [compose] stack")
	}
	if action == "up" && !req.Detach {
		w = append(w, "detach=false ignored: the engine starts the stack detached")
	}
	if req.File != "" && req.File != "compose.yaml" {
		w = append(w, "file "+req.File+" is read on the host by the engine; the guest runs the resolved compose.yaml")
	}
	return w
}
