package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
)

// fakeDocker models Docker inside one guest well enough to check the
// engine's decisions: whether it is installed, the bundles shipped, and
// containers whose config hash is the hash of their service's YAML.
type fakeDocker struct {
	installed bool
	files     map[string]map[string][]byte // remote dir → relative path → content
	running   map[string]map[string]fakeContainer
	ups       []string // projects `up` was run for, in order
	recreated []string // project/service recreated by up
	composes  int      // commands that started compose or probed the runtime: what a converged look avoids
	psRuns    int      // commands that ran docker ps
	apiLists  int      // container lists asked of dockerd's socket
}

type fakeContainer struct{ hash, state string }

// guestWorld is every fake guest, shared by all drivers of a harness.
type guestWorld struct {
	mu      sync.Mutex
	guests  map[string]*fakeDocker
	sockets bool // the guests' dockerd answers on its socket too (socketGuestSim)
}

func (w *guestWorld) get(instance string) *fakeDocker {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.guests == nil {
		w.guests = map[string]*fakeDocker{}
	}
	g, ok := w.guests[instance]
	if !ok {
		g = &fakeDocker{installed: true, files: map[string]map[string][]byte{},
			running: map[string]map[string]fakeContainer{}}
		w.guests[instance] = g
	}
	return g
}

// guestSim is the sim driver plus exec and copy into fake guests.
type guestSim struct {
	*sim.Driver
	world *guestWorld
}

// RunsOnHost: the fake Docker guest is a guest, whatever the sim does.
func (guestSim) RunsOnHost() bool { return false }

var (
	cdRE      = regexp.MustCompile(`^cd '([^']+)'`)
	projectRE = regexp.MustCompile(`compose -p '([^']+)'`)
	mvRE      = regexp.MustCompile(`mv '([^']+)' '([^']+)'`)
	markerRE  = regexp.MustCompile(`read -r b < '([^']+)/.sbf-bundle'`)
)

func (g guestSim) Exec(_ context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	d := g.world.get(instance)
	g.world.mu.Lock()
	defer g.world.mu.Unlock()
	cmd := req.Command
	if strings.Contains(cmd, "compose ") {
		d.composes++
	}
	if strings.Contains(cmd, "docker ps") {
		d.psRuns++
	}
	switch {
	case strings.Contains(cmd, "compose version"): // runtime probe
		if d.installed {
			return drivers.ExecResult{Stdout: "ready:docker\n"}, nil
		}
		return drivers.ExecResult{Stdout: "missing\n"}, nil
	case strings.Contains(cmd, "apt-get install"):
		d.installed = true
		return drivers.ExecResult{}, nil
	case strings.Contains(cmd, "read -r b <"): // guest.ObserveRecorded
		return drivers.ExecResult{Stdout: d.lookRecorded(cmd)}, nil
	case strings.Contains(cmd, "@@bundle"):
		return drivers.ExecResult{Stdout: d.observe(cmdDir(cmd), projectOf(cmd))}, nil
	case strings.Contains(cmd, "up -d --remove-orphans"):
		m := mvRE.FindStringSubmatch(cmd)
		d.files[m[2]] = d.files[m[1]]
		delete(d.files, m[1])
		d.up(m[2], projectOf(cmd))
		return drivers.ExecResult{Stdout: "@@ps\n" + d.ps(projectOf(cmd))}, nil
	}
	return drivers.ExecResult{}, nil // rm -rf, readiness probes, systemctl…
}

func (g guestSim) CopyIn(_ context.Context, instance, local, remote string) error {
	d := g.world.get(instance)
	g.world.mu.Lock()
	defer g.world.mu.Unlock()
	files := map[string][]byte{}
	err := filepath.Walk(local, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			rel, _ := filepath.Rel(local, p)
			files[rel], err = os.ReadFile(p)
		}
		return err
	})
	d.files[remote] = files
	return err
}

func (g guestSim) CopyOut(context.Context, string, string, string) error { return nil }

func cmdDir(cmd string) string    { return cdRE.FindStringSubmatch(cmd)[1] }
func projectOf(cmd string) string { return projectRE.FindStringSubmatch(cmd)[1] }
func (d *fakeDocker) wants(dir string) map[string]string {
	var doc struct {
		Services map[string]any `yaml:"services"`
	}
	yaml.Unmarshal(d.files[dir]["compose.yaml"], &doc)
	out := map[string]string{}
	for name, svc := range doc.Services {
		b, _ := yaml.Marshal(svc)
		sum := sha256.Sum256(b)
		out[name] = hex.EncodeToString(sum[:8])
	}
	return out
}

func (d *fakeDocker) observe(dir, project string) string {
	files, ok := d.files[dir]
	if !ok {
		return "@@nobundle\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@bundle %s@@hash\n", files[".sbf-bundle"])
	want := d.wants(dir)
	for _, svc := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&b, "%s %s\n", svc, want[svc])
	}
	b.WriteString("@@ps\n" + d.ps(project))
	return b.String()
}

// ps is `docker ps -a`'s listing of a project's containers: "project
// service hash state" lines.
func (d *fakeDocker) ps(project string) string {
	var b strings.Builder
	for _, svc := range slices.Sorted(maps.Keys(d.running[project])) {
		c := d.running[project][svc]
		fmt.Fprintf(&b, "%s %s %s %s\n", project, svc, c.hash, c.state)
	}
	return b.String()
}

// lookRecorded answers guest.ObserveRecorded's command: each named
// project's bundle marker, then every compose container.
func (d *fakeDocker) lookRecorded(cmd string) string {
	var b strings.Builder
	for _, m := range markerRE.FindAllStringSubmatch(cmd, -1) {
		project := strings.TrimPrefix(m[1], ".sbf/")
		fmt.Fprintf(&b, "@@bundle %s %s", project, d.files[m[1]][".sbf-bundle"])
		if d.files[m[1]] == nil {
			b.WriteString("\n")
		}
	}
	b.WriteString("@@ps\n")
	for _, project := range slices.Sorted(maps.Keys(d.running)) {
		b.WriteString(d.ps(project))
	}
	return b.String()
}

// up does what `docker compose up -d --remove-orphans` does: recreate
// what differs, start what stopped, remove orphans.
func (d *fakeDocker) up(dir, project string) {
	d.ups = append(d.ups, project)
	want := d.wants(dir)
	if d.running[project] == nil {
		d.running[project] = map[string]fakeContainer{}
	}
	for svc, h := range want {
		if c, ok := d.running[project][svc]; !ok || c.hash != h {
			d.recreated = append(d.recreated, project+"/"+svc)
		}
		d.running[project][svc] = fakeContainer{hash: h, state: "running"}
	}
	for svc := range d.running[project] {
		if _, ok := want[svc]; !ok {
			delete(d.running[project], svc)
		}
	}
	sort.Strings(d.recreated)
}
