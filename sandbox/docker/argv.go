package docker

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// The docker tools' command lines are SandboxForge v1's argvs, word for
// word, so a v1 client reading `command` sees what it always saw.

// KV is one ordered key=value pair: v1 passes build args and labels in a
// fixed order, and the command line must not depend on map iteration.
type KV struct{ Key, Value string }

// BuildSpec is one `docker build`.
type BuildSpec struct {
	Context, Tag, Dockerfile, Target string
	BuildArgs, Labels                []KV
	NoCache                          bool
}

// BuildArgs is `build -t TAG [-f F] [--build-arg K=V]… [--label K=V]…
// [--target T] [--no-cache] -- CONTEXT`. Values a caller chose that stand
// alone follow `--`, so none is read as a flag (an image "--privileged").
func BuildArgs(b BuildSpec) []string {
	args := []string{"build", "-t", b.Tag}
	if b.Dockerfile != "" {
		args = append(args, "-f", b.Dockerfile)
	}
	for _, kv := range b.BuildArgs {
		args = append(args, "--build-arg", kv.Key+"="+kv.Value)
	}
	for _, kv := range b.Labels {
		args = append(args, "--label", kv.Key+"="+kv.Value)
	}
	if b.Target != "" {
		args = append(args, "--target", b.Target)
	}
	if b.NoCache {
		args = append(args, "--no-cache")
	}
	return append(args, "--", b.Context)
}

// RunSpec is one `docker run`.
type RunSpec struct {
	Image, Command, Name, Workdir string
	Env                           map[string]string
	Volumes, Ports                []string
	Detach, Privileged            bool
}

// RunArgs is `run [-d] [--name N] [--privileged] [-w W] [-e K=V]… [-v V]…
// [-p P]… -- IMAGE [sh -lc CMD]`; env in name order.
func RunArgs(r RunSpec) []string {
	args := []string{"run"}
	if r.Detach {
		args = append(args, "-d")
	}
	if r.Name != "" {
		args = append(args, "--name", r.Name)
	}
	if r.Privileged {
		args = append(args, "--privileged")
	}
	if r.Workdir != "" {
		args = append(args, "-w", r.Workdir)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		args = append(args, "-e", k+"="+r.Env[k])
	}
	for _, v := range r.Volumes {
		args = append(args, "-v", v)
	}
	for _, p := range r.Ports {
		args = append(args, "-p", p)
	}
	args = append(args, "--", r.Image)
	if r.Command != "" {
		args = append(args, "sh", "-lc", r.Command)
	}
	return args
}

// ExecArgs is `exec -- CONTAINER sh -lc CMD`.
func ExecArgs(container, command string) []string {
	return []string{"exec", "--", container, "sh", "-lc", command}
}

// LogsArgs is `logs --tail N [--follow] [--since S] -- CONTAINER`.
func LogsArgs(container string, tail int, follow bool, since string) []string {
	args := []string{"logs", "--tail", strconv.Itoa(tail)}
	if follow {
		args = append(args, "--follow")
	}
	if since != "" {
		args = append(args, "--since", since)
	}
	return append(args, "--", container)
}

// PsArgs is `ps [-a]`.
func PsArgs(all bool) []string {
	if all {
		return []string{"ps", "-a"}
	}
	return []string{"ps"}
}

// CleanupArgs are the prunes of a cleanup mode: safe removes stopped
// containers and dangling images; aggressive also every unused image,
// network and volume. Any mode but aggressive is safe, as in v1.
func CleanupArgs(mode string) [][]string {
	if strings.ToLower(strings.TrimSpace(mode)) == "aggressive" {
		return [][]string{
			{"container", "prune", "-f"},
			{"image", "prune", "-af"},
			{"network", "prune", "-f"},
			{"volume", "prune", "-f"},
		}
	}
	return [][]string{{"container", "prune", "-f"}, {"image", "prune", "-f"}}
}

// ComposeActions are the docker compose subcommands the tool runs.
var ComposeActions = []string{"build", "down", "exec", "logs", "ps", "pull", "restart", "stop", "up"}

// composeTakesServices are the actions services are appended to.
var composeTakesServices = []string{"up", "ps", "logs", "pull", "build", "restart", "stop"}

// ComposeSpec is one `docker compose` call.
type ComposeSpec struct {
	Project, File, Action string
	Services              []string
	Detach, Follow, Quiet bool
	Command, Since        string
	Tail                  *int
}

// NormalizeComposeAction lower-cases and trims an action, refusing one
// outside ComposeActions with DOCKER_COMMAND_FAILED and
// details.allowed_actions, as v1 did.
func NormalizeComposeAction(action string) (string, error) {
	a := strings.ToLower(strings.TrimSpace(action))
	if !slices.Contains(ComposeActions, a) {
		return "", coded.New(CodeDockerFailed, map[string]any{"action": action, "allowed_actions": ComposeActions},
			"Unsupported compose action '%s' (allowed: %s)", action, strings.Join(ComposeActions, ", "))
	}
	return a, nil
}

// ComposeArgs is `compose [-p P] [-f F] ACTION …`: -d for a detached up;
// --follow, --since, --tail for logs; -q for a quiet ps; services for the
// actions that take them; `-T SVC sh -lc CMD` for exec, which needs both.
func ComposeArgs(c ComposeSpec) ([]string, error) {
	action, err := NormalizeComposeAction(c.Action)
	if err != nil {
		return nil, err
	}
	if action == "exec" && (len(c.Services) == 0 || c.Command == "") {
		return nil, coded.New(CodeDockerFailed, map[string]any{"action": action},
			"compose exec requires both services[0] and command")
	}
	args := []string{"compose"}
	if c.Project != "" {
		args = append(args, "-p", c.Project)
	}
	if c.File != "" {
		args = append(args, "-f", c.File)
	}
	args = append(args, action)
	switch {
	case action == "up" && c.Detach:
		args = append(args, "-d")
	case action == "logs":
		args = append(args, logsFlags(c)...)
	case action == "ps" && c.Quiet:
		args = append(args, "-q")
	}
	if slices.Contains(composeTakesServices, action) && len(c.Services) > 0 {
		args = append(append(args, "--"), c.Services...)
	}
	if action == "exec" {
		args = append(args, "-T", "--", c.Services[0], "sh", "-lc", c.Command)
	}
	return args, nil
}

func logsFlags(c ComposeSpec) []string {
	var args []string
	if c.Follow {
		args = append(args, "--follow")
	}
	if c.Since != "" {
		args = append(args, "--since", c.Since)
	}
	if c.Tail != nil {
		args = append(args, "--tail", strconv.Itoa(*c.Tail))
	}
	return args
}
