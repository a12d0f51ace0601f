package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/internal/coded"
)

// simPlugin is a plugin over the sim's world: what the protocol carries, without a cluster.
type simPlugin struct {
	*sim.Driver
	ssh    *sshtest.Server // every instance's sshd, when set
	mu     sync.Mutex
	leases map[string]time.Time
	hello  Hello
	// block, when set, makes Start wait for its context, reporting progress first.
	block    bool
	canceled chan struct{}
}

func newSimPlugin(t *testing.T) *simPlugin {
	d, err := sim.New(sim.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &simPlugin{Driver: d, leases: map[string]time.Time{}, canceled: make(chan struct{})}
}

func (p *simPlugin) Hello(_ context.Context, h Hello) (HelloResult, error) {
	p.hello = h
	return HelloResult{ProtocolVersion: h.ProtocolVersion, Driver: "sim", Where: "a test world"}, nil
}

func (p *simPlugin) Start(ctx context.Context, s drivers.Spec) error {
	if p.block {
		drivers.Progressf(ctx, "waiting for %s", s.Name)
		<-ctx.Done()
		close(p.canceled)
		return ctx.Err()
	}
	return p.Driver.Start(ctx, s)
}

func (p *simPlugin) Validate(_ context.Context, s drivers.Spec) error {
	if s.VMType == "wsl2" {
		return &drivers.SpecError{Driver: "sim", Key: "vm_type", Reason: "run wsl2"}
	}
	return nil
}

func (p *simPlugin) RecordLease(_ context.Context, name string, at time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leases[name] = at
	return nil
}

func (p *simPlugin) SSH(_ context.Context, name string) (SSHEndpoint, error) {
	if p.ssh == nil {
		return SSHEndpoint{}, &drivers.UnavailableError{Driver: "sim", Reason: "no sshd", ProbableCause: "rbac_forbidden",
			NextSteps: []string{"grant pods/portforward"}}
	}
	return SSHEndpoint{Host: p.ssh.Host, Port: p.ssh.Port, User: "me"}, nil
}

func (p *simPlugin) Diagnose(_ context.Context, specs []drivers.Spec) drivers.Diagnosis {
	d := drivers.Diagnosis{Driver: "sim", Summary: fmt.Sprintf("%d specs", len(specs))}
	d.Add(drivers.Check{Name: "world", Status: drivers.CheckOK})
	d.Finish()
	return d
}

// overPipes serves p on in-process pipes and opens a driver on them.
func overPipes(t *testing.T, p Plugin, key string) *Driver {
	t.Helper()
	toPlugin, fromSbf := io.Pipe()
	toSbf, fromPlugin := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), toPlugin, fromPlugin, p)
		fromPlugin.Close()
	}()
	d, err := Open(context.Background(), Session{Driver: "sim", KeyPath: key,
		Hello: Hello{WorkspaceID: "ws_c0ffee00aabb", SSHUser: "me"}}, toSbf, fromSbf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return d
}

// The protocol keeps the contract of the backend behind it.
func TestContractOverThePipe(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			return drivertest.World{Driver: overPipes(t, newSimPlugin(t), "")}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, Arch: "x86_64", VMType: "qemu"}
		},
	})
}

func TestErrorsKeepTheirKindAcrossTheWire(t *testing.T) {
	ctx := context.Background()
	p := newSimPlugin(t)
	d := overPipes(t, p, "")
	if p.hello.WorkspaceID != "ws_c0ffee00aabb" || p.hello.ProtocolVersion != ProtocolVersion {
		t.Errorf("the plugin was greeted with %+v", p.hello)
	}
	name := drivers.InstanceName("ws_c0ffee00aabb", "a")
	if err := d.Stop(ctx, name); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("Stop of a missing instance: %v; want drivers.ErrNotFound", err)
	}
	s := drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 1}
	must(t, d.Create(ctx, s))
	owner := drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: "a"}
	must(t, d.Claim(ctx, name, owner))
	var owned *drivers.OwnedError
	err := d.Claim(ctx, name, drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: "b"})
	if !errors.As(err, &owned) || !errors.Is(err, drivers.ErrOwned) || !owned.Owner.Same(owner) || owned.Instance != name {
		t.Errorf("a losing claim: %v (%+v); want an OwnedError naming %v", err, owned, owner)
	}
	var se *drivers.SpecError
	err = d.Validate(context.Background(), drivers.Spec{Name: name, VMType: "wsl2"})
	if !errors.As(err, &se) || se.Key != "vm_type" {
		t.Errorf("Validate: %v; want a SpecError on vm_type", err)
	}
	_, err = d.Exec(ctx, name, drivers.ExecRequest{Command: "true"})
	c := coded.Of(err, coded.Unknown)
	if c.Code != coded.BackendUnavailable || fmt.Sprint(c.Details["next_steps"]) != "[grant pods/portforward]" {
		t.Errorf("an unavailable endpoint: %+v; want BACKEND_UNAVAILABLE with the plugin's next steps", c)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, d.RecordLease(ctx, name, at))
	if got := p.leases[name]; !got.Equal(at) {
		t.Errorf("lease recorded as %v; want %v", got, at)
	}
	diag, err := d.Diagnose(ctx, []drivers.Spec{s})
	if err != nil || !diag.Usable || diag.Summary != "1 specs" {
		t.Errorf("Diagnose: %+v, %v", diag, err)
	}
}

func TestCancelReachesThePluginAndProgressComesBack(t *testing.T) {
	p := newSimPlugin(t)
	p.block = true
	d := overPipes(t, p, "")
	name := drivers.InstanceName("ws_c0ffee00aabb", "a")
	s := drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 1}
	must(t, d.Create(context.Background(), s))
	progressed := make(chan string, 1)
	ctx, cancel := context.WithCancel(drivers.WithProgress(context.Background(), func(msg string) {
		progressed <- msg
	}))
	errc := make(chan error, 1)
	go func() { errc <- d.Start(ctx, s) }()
	if msg := <-progressed; msg != "waiting for "+name {
		t.Errorf("progress %q", msg)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled Start: %v", err)
	}
	<-p.canceled // the plugin's call was canceled too; a hang here is the failure
}

func TestExecGoesOverSSHToTheReportedEndpoint(t *testing.T) {
	p := newSimPlugin(t)
	p.ssh = sshtest.Start(t)
	d := overPipes(t, p, p.ssh.KeyFile)
	ctx := context.Background()
	name := drivers.InstanceName("ws_c0ffee00aabb", "a")
	s := drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 1}
	must(t, d.Create(ctx, s))
	must(t, d.Start(ctx, s))
	for range 2 {
		res, err := d.Exec(ctx, name, drivers.ExecRequest{Command: "echo hello; exit 3"})
		if err != nil || res.Stdout != "hello\n" || res.ExitCode != 3 || !strings.HasPrefix(res.Via, "ssh") {
			t.Fatalf("Exec: %+v, %v", res, err)
		}
	}
	if n := p.ssh.Connections.Load(); n != 1 {
		t.Errorf("%d SSH connections for two commands; want the one kept open", n)
	}
	must(t, d.Stop(ctx, name))
	if d.Alive(name) {
		t.Error("the connection outlived Stop")
	}
}

func TestAMissingPluginSaysHowToGetOne(t *testing.T) {
	env := map[string]string{"PATH": t.TempDir()}
	t.Setenv("PATH", env["PATH"])
	_, err := KubeVirt.Find(func(k string) string { return env[k] }, nil, nil)
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || u.ProbableCause != "backend_binary_missing" || len(u.NextSteps) != 2 ||
		!strings.Contains(u.NextSteps[0], "make sbf-kubevirt") {
		t.Fatalf("Find: %v; want an UnavailableError with next steps", err)
	}
	reg, ok := drivers.Lookup("kubevirt")
	if !ok || !reg.PerWorkspace {
		t.Fatalf("kubevirt registration: %+v", reg)
	}
	diag := reg.Diagnose(context.Background(), drivers.Env{Getenv: func(k string) string { return env[k] },
		StateDir: t.TempDir()}, nil)
	if diag.Usable || len(diag.Checks) != 1 || diag.Checks[0].Name != "plugin" || len(diag.Checks[0].NextSteps) != 2 {
		t.Errorf("Diagnose without a plugin: %+v", diag)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMain serves a sim world as a plugin process when asked: the test binary is its own
// plugin program.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SBF_EXTERNAL_TEST_PLUGIN"); dir != "" {
		d, err := sim.New(sim.Options{Dir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		p := &simPlugin{Driver: d, leases: map[string]time.Time{}}
		if os.Getenv("SBF_EXTERNAL_TEST_PLUGIN_DIE") != "" {
			fmt.Fprintln(os.Stderr, "plugin: giving up on purpose")
			os.Exit(7)
		}
		if err := Serve(context.Background(), os.Stdin, os.Stdout, p); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// departingPlugin is a plugin that saw an instance go without sbf.
type departingPlugin struct{ *simPlugin }

func (p departingPlugin) Departures(_ context.Context, names []string) ([]drivers.Departure, error) {
	return []drivers.Departure{{Instance: names[0], Reason: "LeaseExpired", Expired: true, By: "ctl",
		At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}, nil
}

// Why an instance went crosses the pipe as the plugin saw it; a plugin that cannot say
// knows of nothing, which is no error.
func TestDeparturesCrossThePipe(t *testing.T) {
	ctx := context.Background()
	got, err := overPipes(t, departingPlugin{newSimPlugin(t)}, "").Departures(ctx, []string{"sbf-c0ffee00-a"})
	if err != nil || len(got) != 1 || got[0].Instance != "sbf-c0ffee00-a" || !got[0].Expired || got[0].By != "ctl" ||
		got[0].At.Year() != 2026 {
		t.Errorf("Departures: %+v, %v", got, err)
	}
	if got, err := overPipes(t, newSimPlugin(t), "").Departures(ctx, []string{"sbf-c0ffee00-a"}); err != nil ||
		len(got) != 0 {
		t.Errorf("a plugin without departures: %+v, %v", got, err)
	}
}
