package guest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// RemoteDir is where a project's bundle lives in the guest, relative to
// the guest user's home.
func RemoteDir(project string) string { return ".sbf/" + project }

// Container is one container of a project as Docker reports it.
type Container struct {
	Hash  string `json:"hash"`  // com.docker.compose.config-hash
	State string `json:"state"` // running, exited, …
}

// ProjectState is what the guest runs for a project.
type ProjectState struct {
	Bundle     string               `json:"bundle"`     // marker of the shipped bundle; "" when none
	Want       map[string]string    `json:"want"`       // service → `docker compose config --hash` of the shipped files
	Containers map[string]Container `json:"containers"` // service → its container
	Error      string               `json:"error,omitempty"`
}

// ObserveProject reads a project's state with one command: the bundle
// marker, the config hashes compose computes for the shipped files, and
// the running containers' config-hash labels. It changes nothing.
func ObserveProject(ctx context.Context, r Runner, docker, project string) (ProjectState, error) {
	script := fmt.Sprintf(`cd %s 2>/dev/null || { echo '@@nobundle'; exit 0; }
echo "@@bundle $(cat .sbf-bundle 2>/dev/null)"
echo '@@hash'; %s compose -p %s -f compose.yaml config --hash '*' 2>&1 || echo '@@error'
echo '@@ps'; %s`,
		shellquote.Quote(RemoteDir(project)), docker, shellquote.Quote(project), psLine(docker, project))
	res, err := r.Exec(ctx, drivers.ExecRequest{Command: script, Timeout: 2 * time.Minute})
	if err != nil {
		return ProjectState{}, fmt.Errorf("observing compose project %s: %w", project, err)
	}
	return parseObservation(res.Stdout, project), nil
}

// psLine lists compose's containers (a project's; every project's when
// project is ""), one "project service config-hash state" line each: the
// labels compose gives every container it makes.
func psLine(docker, project string) string {
	filter := "label=com.docker.compose.project"
	if project != "" {
		filter += "=" + shellquote.Quote(project)
	}
	return docker + " ps -a --filter " + filter + ` --format '{{.Label "com.docker.compose.project"}} ` +
		`{{.Label "com.docker.compose.service"}} {{.Label "com.docker.compose.config-hash"}} {{.State}}'`
}

// psContainer reads one psLine line's fields.
func psContainer(f []string) (project, service string, c Container, ok bool) {
	if len(f) != 4 {
		return "", "", Container{}, false
	}
	return f[0], f[1], Container{Hash: f[2], State: f[3]}, true
}

func parseObservation(out, project string) ProjectState {
	s := ProjectState{Want: map[string]string{}, Containers: map[string]Container{}}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "@@nobundle":
			return s
		case strings.HasPrefix(line, "@@bundle"):
			s.Bundle = strings.TrimSpace(strings.TrimPrefix(line, "@@bundle"))
		case line == "@@hash" || line == "@@ps":
			section = line
		case line == "@@error":
			s.Error = "docker compose config failed in the guest"
		case line == "":
		case section == "@@hash":
			if f := strings.Fields(line); len(f) == 2 {
				s.Want[f[0]] = f[1]
			} else {
				s.Error = line
			}
		case section == "@@ps":
			if p, svc, c, ok := psContainer(strings.Fields(line)); ok && p == project {
				s.Containers[svc] = c
			}
		}
	}
	return s
}

// Drift lists why a project needs `up`: its files changed (naming the
// services whose resolved config differs from what was last applied), or
// the containers do not match the shipped files. Nothing means converged.
func (p *Project) Drift(s ProjectState, applied map[string]string) []string {
	if s.Bundle != p.Bundle {
		changed := changedServices(p.Services, applied)
		switch {
		case s.Bundle == "":
			return []string{"not deployed"}
		case len(changed) == 0:
			return []string{"files changed"}
		}
		return []string{"changed: " + strings.Join(changed, ", ")}
	}
	if s.Error != "" {
		return []string{s.Error}
	}
	var out []string
	for _, svc := range slices.Sorted(maps.Keys(s.Want)) {
		c, ok := s.Containers[svc]
		switch {
		case !ok:
			out = append(out, svc+" not created")
		case c.Hash != s.Want[svc]:
			out = append(out, svc+" differs from its config")
		case c.State != "running":
			out = append(out, svc+" is "+c.State)
		}
	}
	for _, svc := range slices.Sorted(maps.Keys(s.Containers)) {
		if _, ok := s.Want[svc]; !ok {
			out = append(out, svc+" is an orphan")
		}
	}
	return out
}

func changedServices(now, before map[string]string) []string {
	var out []string
	for svc, h := range now {
		if before[svc] != h {
			out = append(out, svc)
		}
	}
	for svc := range before {
		if _, ok := now[svc]; !ok {
			out = append(out, svc+" (removed)")
		}
	}
	sort.Strings(out)
	return out
}

// ApplyProject ships the bundle and runs `docker compose up -d
// --remove-orphans`; compose recreates only services whose config hash
// changed. The new bundle replaces the old one whole, then the marker
// records what was shipped. It returns the config hash of each service's
// container as the up left it (what ObserveRecorded later compares with).
func ApplyProject(ctx context.Context, r Runner, docker string, p *Project) (map[string]string, error) {
	stage, err := os.MkdirTemp("", "sbf-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	if err := stageBundle(stage, p); err != nil {
		return nil, fmt.Errorf("preparing the %s bundle: %w", p.Name, err)
	}
	dir := RemoteDir(p.Name)
	rm := drivers.ExecRequest{Command: "rm -rf " + shellquote.Quote(dir+".new"), Timeout: time.Minute}
	if _, err := r.Exec(ctx, rm); err != nil {
		return nil, err
	}
	if err := r.CopyIn(ctx, stage, dir+".new"); err != nil {
		return nil, fmt.Errorf("shipping the %s bundle: %w", p.Name, err)
	}
	build := ""
	if len(p.Extra) > 0 {
		build = " --build"
	}
	script := fmt.Sprintf(
		"rm -rf %[1]s && mv %[2]s %[1]s && cd %[1]s && "+
			"%[3]s compose -p %[4]s -f compose.yaml up -d --remove-orphans%[5]s && { echo '@@ps'; %[6]s || true; }",
		shellquote.Quote(dir),
		shellquote.Quote(dir+".new"),
		docker,
		shellquote.Quote(p.Name),
		build,
		psLine(docker, p.Name),
	)
	res, err := r.Exec(ctx, drivers.ExecRequest{Command: script, Timeout: 20 * time.Minute})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &coded.Error{
			Code: "DOCKER_COMMAND_FAILED",
			Message: fmt.Sprintf("docker compose up for %s failed (exit %d): %s",
				p.Name, res.ExitCode, tail(strings.TrimSpace(res.Stderr), 2000)),
			Details: map[string]any{
				"project":   p.Name,
				"exit_code": res.ExitCode,
				"stdout":    tail(res.Stdout, 4000),
				"stderr":    tail(res.Stderr, 4000),
			},
		}
	}
	hashes := map[string]string{}
	for svc, c := range parseObservation(res.Stdout, p.Name).Containers {
		hashes[svc] = c.Hash
	}
	return hashes, nil
}

// stageBundle lays out what ships: the resolved compose file, the files it
// references (read inside the workspace only, WalkShipped), and the marker.
func stageBundle(stage string, p *Project) error {
	if err := os.WriteFile(filepath.Join(stage, "compose.yaml"), p.Resolved, 0o600); err != nil {
		return err
	}
	for _, rel := range p.Extra {
		if err := WalkShipped(p.Root, p.Dir, rel, func(e ShippedEntry) error { return stageEntry(stage, e) }); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(stage, ".sbf-bundle"), []byte(p.Bundle+"\n"), 0o644)
}

func stageEntry(stage string, e ShippedEntry) error {
	target := filepath.Join(stage, filepath.FromSlash(e.Name))
	switch {
	case e.Mode.IsDir():
		return os.MkdirAll(target, 0o755)
	case e.Content != nil:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, e.Mode.Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(out, e.Content)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// WaitReady polls each service's readiness probe until all answer or the
// timeout passes (SERVICE_NOT_READY, with the last probe output).
func WaitReady(ctx context.Context, r Runner, docker string, probes map[string]string, timeout time.Duration,
	sleep func(context.Context, time.Duration) error) (map[string]int, error) {
	const interval = 2 * time.Second
	attempts := map[string]int{}
	last := map[string]string{}
	pending := slices.Sorted(maps.Keys(probes))
	for round := 1; len(pending) > 0; round++ {
		var still []string
		for _, name := range pending {
			attempts[name]++
			res, err := r.Exec(ctx, drivers.ExecRequest{Command: docker + " exec " + probes[name],
				Timeout: 10 * time.Second})
			if err == nil && res.ExitCode == 0 {
				continue
			}
			last[name] = strings.TrimSpace(res.Stdout + res.Stderr)
			still = append(still, name)
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Duration(round)*interval >= timeout {
			return attempts, &coded.Error{Code: "SERVICE_NOT_READY",
				Message: fmt.Sprintf("services not ready after %s: %s", timeout, strings.Join(pending, ", ")),
				Details: map[string]any{"timeout_seconds": timeout.Seconds(), "pending_services": pending,
					"readiness": attempts, "last_probe_results": last}}
		}
		if err := sleep(ctx, interval); err != nil {
			return attempts, err
		}
	}
	return attempts, nil
}

// ReadinessProbes are the commands (after `docker exec`) that tell a
// service answers.
func ReadinessProbes(containers map[string]string) map[string]string {
	out := map[string]string{}
	for svc, c := range containers {
		switch svc {
		case "mysql":
			out[svc] = shellquote.Quote(
				c,
			) + ` sh -c 'MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mysqladmin ping -h 127.0.0.1 -uroot --silent'`
		case "redis":
			out[svc] = shellquote.Quote(c) + ` sh -c 'redis-cli ping | grep -q PONG'`
		}
	}
	return out
}
