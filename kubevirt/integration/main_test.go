// Package integration runs sbf's side of the kubevirt backend, as sbf runs it, against a
// real kube-apiserver: the sbf-kubevirt plugin built from this module and started by
// drivers/external, the reconcile engine on a workspace, and serve-leader replicas.
//
// Every test runs in parallel with the others (t.Parallel) in namespaces of its own, as most
// wait on leases, boots and leader elections, not the CPU; cluster-wide objects they make carry
// their namespace's name. The test that changes the whole cluster (KubeVirt down) and those that
// hand a child process a port they picked (freeAddrs) are not parallel: they run alone, first.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/external"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

var (
	cluster *kubetest.Cluster
	plugin  string // the sbf-kubevirt binary under test
)

func TestMain(m *testing.M) {
	var cleanups []func() error
	if kubetest.Bins() != "" {
		dir, err := os.MkdirTemp("", "sbf-kubevirt-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		plugin = filepath.Join(dir, "sbf-kubevirt")
		if err := buildPlugin(dir); err != nil {
			fmt.Fprintln(os.Stderr, "building sbf-kubevirt:", err)
			os.Exit(1)
		}
		cleanups = append(cleanups, func() error {
			defer os.RemoveAll(dir)
			return pluginRaces(dir)
		})
	}
	kubetest.Main(m, &cluster, cleanups...)
}

// buildPlugin builds sbf-kubevirt into dir as these tests are built: with the race detector
// under -race, so that a race in the plugin's own goroutines (its controller, its leases, its
// leader) fails the run, and its packages compile once for the tests and the plugin (client-go
// both ways was ~110 s of a cold make test). Each plugin process writes what it found to
// dir/race.PID (GORACE's log_path, which every process the tests start inherits).
func buildPlugin(dir string) error {
	args := []string{"build", "-o", plugin}
	if testutil.Race {
		args = append(args, "-race")
		gorace := strings.TrimSpace(os.Getenv("GORACE") + " log_path=" + filepath.Join(dir, "race"))
		if err := os.Setenv("GORACE", gorace); err != nil {
			return err
		}
	}
	build := exec.Command("go", append(args, "../cmd/sbf-kubevirt")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return build.Run()
}

// pluginRaces fails the run with the races plugin processes reported, if any.
func pluginRaces(dir string) error {
	logs, err := filepath.Glob(filepath.Join(dir, "race.*"))
	if err != nil || len(logs) == 0 {
		return err
	}
	var reports strings.Builder
	for _, log := range logs {
		b, _ := os.ReadFile(log)
		fmt.Fprintf(&reports, "%s:\n%s\n", filepath.Base(log), b)
	}
	return fmt.Errorf("%d sbf-kubevirt processes reported data races:\n%s", len(logs), reports.String())
}

var sourcesRead struct {
	once sync.Once
	err  error
}

// coverSources makes go test's cache key cover what the binaries these tests build and run are
// made of (go test hears only of what a test, not TestMain, opens or reads from the
// environment): this module's sources, opened, and sbf's, outside this module (whose files go
// test does not look at), by the digest scripts/kubevirt-tests.sh passes in SBF_SOURCES_ID.
func coverSources(t testing.TB) {
	t.Helper()
	sourcesRead.once.Do(func() {
		_ = os.Getenv("SBF_SOURCES_ID") // read, so in the key
		sourcesRead.err = kubetest.ReadSources("../..")
	})
	if sourcesRead.err != nil {
		t.Fatalf("reading the sources of sbf and sbf-kubevirt: %v", sourcesRead.err)
	}
}

// space is a namespace of the test cluster with the stand-in KubeVirt in it.
type space struct {
	ns         string
	admin      client.Client
	kubeconfig string // an admin's
}

func newSpace(t testing.TB, o fakevirt.Options) space {
	t.Helper()
	s := bareSpace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fakevirt.Run(ctx, s.admin, s.ns, o)
	return s
}

// bareSpace is a namespace where no stand-in plays KubeVirt: as on a cluster whose
// KubeVirt is down.
func bareSpace(t testing.TB) space {
	t.Helper()
	kubetest.Need(t, cluster)
	coverSources(t)
	ns := cluster.Namespace(t)
	c, err := driver.NewClient(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	return space{ns: ns, admin: c, kubeconfig: kubetest.Kubeconfig(t, cluster.Config)}
}

// env is sbf's environment for the plugin: the cluster, the namespace, the plugin's path.
func (s space) env(t testing.TB, c clock.Clock, kubeconfig string) drivers.Env {
	vars := map[string]string{"KUBECONFIG": kubeconfig, "SBF_KUBEVIRT_NAMESPACE": s.ns, "SBF_KUBEVIRT_DRIVER": plugin,
		"SBF_KUBEVIRT_POLL": "50ms", "SBF_KUBEVIRT_START_TIMEOUT": "1m"}
	return drivers.Env{Getenv: func(k string) string { return vars[k] }, Clock: c, StateDir: t.TempDir(),
		Workspace: t.TempDir(), HostOS: "linux", HostArch: "amd64"}
}

// launch starts the plugin as sbf does (the kubevirt registration) and closes it when
// the test ends.
func launch(t testing.TB, env drivers.Env) (*external.Driver, error) {
	t.Helper()
	reg, ok := drivers.Lookup("kubevirt")
	if !ok {
		t.Fatal("kubevirt is not registered")
	}
	d, err := reg.New(context.Background(), env)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { d.(*external.Driver).Close() })
	return d.(*external.Driver), nil
}

// factory builds each workspace's kubevirt driver once, as reconcile.Backends does, and
// closes them when the test ends.
func factory(t *testing.T, env drivers.Env) func(string, string) (drivers.Driver, error) {
	var mu sync.Mutex
	cache := map[string]drivers.Driver{}
	return func(name, root string) (drivers.Driver, error) {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := cache[root]; ok {
			return d, nil
		}
		if name != "kubevirt" {
			return nil, drivers.NotBuiltIn(name)
		}
		e := env
		e.Workspace = root
		d, err := launch(t, e)
		if err != nil {
			return nil, err
		}
		cache[root] = d
		return d, nil
	}
}

var quick = fakevirt.Options{StartDelay: 100 * time.Millisecond, StopDelay: 50 * time.Millisecond}
