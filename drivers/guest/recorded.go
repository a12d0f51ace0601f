package guest

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// ObserveRecorded is the cheap look at a guest that the last apply left
// converged: one command that reads each project's bundle marker, and the
// compose containers listed by dockerd's API (dockerapi.go) or, where that
// cannot be asked, a single `docker ps` in the same command; no compose.
// Under emulation the runtime probe and `compose config --hash` cost
// ~3.8 s of the guest's CPU on every loop pass, beside the commands an
// agent runs there; `docker ps` ~0.8 s.
//
// recorded holds, per project, the config hash of each service's
// container as ApplyProject left it. When every project still has its
// bundle (the marker p.Bundle) and exactly those containers, each running
// with the hash it was given, compose would find each one matching the
// shipped files: the states returned say so. ok is false when anything
// differs or cannot be read; the caller then looks the long way
// (ProbeRuntime, ObserveProject), which names what differs.
func ObserveRecorded(ctx context.Context, r Runner, docker string, projects []*Project,
	recorded map[string]map[string]string) (states map[string]ProjectState, ok bool) {
	if docker == "" || len(projects) == 0 {
		return nil, false
	}
	var script strings.Builder
	for _, p := range projects {
		if len(recorded[p.Name]) == 0 {
			return nil, false
		}
		// read, not cat: one process fewer in an emulated guest
		fmt.Fprintf(&script, "b=; { read -r b < %s; } 2>/dev/null; echo @@bundle %s \"$b\"\n",
			shellquote.Quote(RemoteDir(p.Name)+"/.sbf-bundle"), shellquote.Quote(p.Name))
	}
	script.WriteString("echo '@@ps'")
	containers, viaAPI := listByAPI(ctx, r, docker, projects)
	if !viaAPI {
		fmt.Fprintf(&script, "; %s || echo '@@error'", psLine(docker, ""))
	}
	res, err := r.Exec(ctx, drivers.ExecRequest{Command: script.String(), Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		return nil, false
	}
	bundles, listed, ok := parseRecorded(res.Stdout, projects)
	if !ok {
		return nil, false
	}
	if !viaAPI {
		containers = listed
	}
	states = map[string]ProjectState{}
	for _, p := range projects {
		want, have := recorded[p.Name], containers[p.Name]
		if bundles[p.Name] != p.Bundle || len(have) != len(want) {
			return nil, false
		}
		for svc, c := range have {
			if c.State != "running" || c.Hash != want[svc] {
				return nil, false
			}
		}
		states[p.Name] = ProjectState{Bundle: p.Bundle, Want: maps.Clone(want), Containers: have}
	}
	return states, true
}

// parseRecorded reads ObserveRecorded's output: "@@bundle PROJECT MARKER"
// lines, then "PROJECT SERVICE HASH STATE" lines after "@@ps". Containers
// of other projects (the guest's own stacks) are not looked at; one of
// the projects' listed twice for a service or in another shape, or docker
// failing, is not a clean read.
func parseRecorded(out string, projects []*Project) (map[string]string, map[string]map[string]Container, bool) {
	ours := map[string]bool{}
	for _, p := range projects {
		ours[p.Name] = true
	}
	bundles := map[string]string{}
	containers := map[string]map[string]Container{}
	inPS := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
		case f[0] == "@@error":
			return nil, nil, false
		case f[0] == "@@ps":
			inPS = true
		case inPS && !ours[f[0]]:
		case !inPS && f[0] == "@@bundle" && (len(f) == 2 || len(f) == 3):
			bundles[f[1]] = strings.Join(f[2:], "")
		case inPS:
			project, svc, c, ok := psContainer(f)
			if !ok {
				return nil, nil, false
			}
			if containers[project] == nil {
				containers[project] = map[string]Container{}
			}
			if _, twice := containers[project][svc]; twice {
				return nil, nil, false
			}
			containers[project][svc] = c
		default:
			return nil, nil, false
		}
	}
	return bundles, containers, inPS && sc.Err() == nil
}
