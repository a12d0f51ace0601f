package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Driver is a backend run by a plugin process: lifecycle, labels and leases are the
// plugin's calls; commands, copies and terminals go over SSH to the endpoint the plugin
// reports, through a shared sshexec.Pool (embedded: its Exec, CopyIn, CopyOut, PutArchive,
// GetArchive, Terminal and Alive are the driver's).
type Driver struct {
	*sshexec.Pool
	name  string
	conn  *conn
	proc  *process // nil when the session is not a process (tests)
	key   string   // the private key guests accept
	Where string   // the world the plugin acts on, as it described it
}

// Session is what a driver is made from: where its plugin's pipes are and who it acts for.
type Session struct {
	Driver  string
	Hello   Hello
	KeyPath string // the private key matching Hello.SSHPublicKey
	Clock   clock.Clock
}

// Open starts a session on a plugin's pipes (out: what it writes; in: its stdin).
func Open(ctx context.Context, s Session, out io.Reader, in io.WriteCloser) (*Driver, error) {
	return open(ctx, s, newConn(out, in, nil), nil)
}

func open(ctx context.Context, s Session, c *conn, p *process) (*Driver, error) {
	d := &Driver{name: s.Driver, conn: c, proc: p, key: s.KeyPath}
	d.Pool = sshexec.New(sshexec.Options{Target: d.sshTarget, Clock: s.Clock})
	s.Hello.ProtocolVersion = ProtocolVersion
	var hr HelloResult
	if err := c.call(ctx, MethodHello, s.Hello, &hr); err != nil {
		d.Close()
		return nil, fmt.Errorf("starting the %s plugin: %w", s.Driver, err)
	}
	if hr.ProtocolVersion != ProtocolVersion {
		d.Close()
		return nil, &drivers.UnavailableError{Driver: s.Driver, ProbableCause: "backend_version_mismatch",
			Reason:    fmt.Sprintf("the plugin speaks protocol %d; this sbf speaks %d", hr.ProtocolVersion, ProtocolVersion),
			NextSteps: []string{"build the plugin from the same sbf source as sbf itself"}}
	}
	d.Where = hr.Where
	return d, nil
}

// Launch finds the plugin, starts it with sbf's environment and opens a session on it.
func Launch(ctx context.Context, prog Program, env drivers.Env, s Session) (*Driver, error) {
	path, err := prog.Find(env.Getenv, append(env.GuestWritable[:len(env.GuestWritable):len(env.GuestWritable)],
		env.Workspace), env.WorkspaceHolding)
	if err != nil {
		return nil, err
	}
	c, p, err := start(path, environ(prog, env.Getenv), env.Debug)
	if err != nil {
		return nil, &drivers.UnavailableError{Driver: prog.Driver, Reason: err.Error(),
			ProbableCause: "backend_binary_missing",
			NextSteps:     []string{prog.Build}}
	}
	return open(ctx, s, c, p)
}

// environ is the plugin's environment: this process's, with the settings the plugin reads
// (prog.Env) as sbf was given them, which tests may change.
func environ(prog Program, getenv func(string) string) []string {
	env := os.Environ()
	for _, key := range prog.Env {
		if v := getenv(key); v != os.Getenv(key) {
			env = append(env, key+"="+v) // the last of a key wins
		}
	}
	return env
}

// Close ends the session: SSH connections, then the plugin (it exits when its stdin
// closes; one that does not within a few seconds is killed).
func (d *Driver) Close() error {
	d.Pool.Close()
	err := d.conn.close()
	if d.proc != nil {
		select {
		case <-d.proc.waited:
		case <-clock.Real{}.After(5 * time.Second): // a process exits in real time
			d.proc.cmd.Process.Kill()
			<-d.proc.waited
		}
	}
	return err
}

func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	var out []drivers.Instance
	err := d.conn.call(ctx, MethodList, nil, &out)
	return out, err
}

func (d *Driver) Create(ctx context.Context, s drivers.Spec) error {
	return d.conn.call(ctx, MethodCreate, s, nil)
}

func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	return d.conn.call(ctx, MethodStart, s, nil)
}

func (d *Driver) Stop(ctx context.Context, name string) error {
	d.Pool.Drop(name)
	return d.conn.call(ctx, MethodStop, Name{name}, nil)
}

func (d *Driver) Delete(ctx context.Context, name string) error {
	d.Pool.Drop(name)
	return d.conn.call(ctx, MethodDelete, Name{name}, nil)
}

func (d *Driver) Reconfigure(ctx context.Context, s drivers.Spec) error {
	return d.conn.call(ctx, MethodReconfigure, s, nil)
}

// Validate asks the plugin at plan time; a plugin that cannot be reached then is no
// reason to refuse a plan (the apply will say so).
func (d *Driver) Validate(ctx context.Context, s drivers.Spec) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := d.conn.call(ctx, MethodValidate, s, nil)
	var se *drivers.SpecError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// EnforceEgress asks the plugin at plan time whether it enforces s's network policy. Unlike
// Validate, any failure refuses: a policy nobody confirmed is never run open.
func (d *Driver) EnforceEgress(ctx context.Context, s drivers.Spec) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := d.conn.call(ctx, MethodEnforceEgress, s, nil)
	var pe *drivers.PolicyError
	if err == nil || errors.As(err, &pe) {
		return err // the plugin's own answer says what it cannot enforce
	}
	return fmt.Errorf("asking the %s plugin whether it enforces the policy: %w", d.name, err)
}

func (d *Driver) MarkSpare(ctx context.Context, name string, l drivers.SpareLabel) error {
	return d.conn.call(ctx, MethodMarkSpare, Spare{Name: name, Label: l}, nil)
}

func (d *Driver) Claim(ctx context.Context, name string, o drivers.Owner) error {
	return d.conn.call(ctx, MethodClaim, Claim{Name: name, Owner: o}, nil)
}

// RecordLease records on the instance when its lease ends (LeaseRecorder).
func (d *Driver) RecordLease(ctx context.Context, name string, expiresAt time.Time) error {
	return d.conn.call(ctx, MethodRecordLease, Lease{Name: name, ExpiresAt: expiresAt}, nil)
}

// Departures asks the plugin why the named instances went without sbf
// (drivers.DepartureReporter). A plugin older than the method knows of none.
func (d *Driver) Departures(ctx context.Context, names []string) ([]drivers.Departure, error) {
	var out []drivers.Departure
	err := d.conn.call(ctx, MethodDepartures, Names{Names: names}, &out)
	if err != nil && strings.Contains(err.Error(), "unknown method") {
		return nil, nil
	}
	return out, err
}

// Diagnose asks the plugin what it needs for these VMs.
func (d *Driver) Diagnose(ctx context.Context, specs []drivers.Spec) (drivers.Diagnosis, error) {
	var out drivers.Diagnosis
	err := d.conn.call(ctx, MethodDiagnose, Diagnose{Specs: specs}, &out)
	return out, err
}

// sshTarget asks the plugin to make the instance's sshd reachable here.
func (d *Driver) sshTarget(ctx context.Context, instance string) (sshexec.Target, error) {
	var ep SSHEndpoint
	if err := d.conn.call(ctx, MethodSSH, Name{instance}, &ep); err != nil {
		return sshexec.Target{}, err
	}
	return sshexec.Target{Host: ep.Host, Port: ep.Port, User: ep.User, IdentityFiles: []string{d.key}}, nil
}

// keyPath is where the key guests of this backend accept is kept: SBF_<DRIVER>_SSH_KEY,
// else in sbf's host-wide state folder.
func keyPath(env drivers.Env, driver string) string {
	if p := env.Getenv("SBF_" + strings.ToUpper(driver) + "_SSH_KEY"); p != "" {
		return p
	}
	return filepath.Join(env.StateDir, driver, "id_ed25519")
}

var (
	_ drivers.Driver            = (*Driver)(nil)
	_ drivers.Execer            = (*Driver)(nil)
	_ drivers.Copier            = (*Driver)(nil)
	_ drivers.ArchiveCopier     = (*Driver)(nil)
	_ drivers.Terminal          = (*Driver)(nil)
	_ drivers.Connector         = (*Driver)(nil)
	_ drivers.Validator         = (*Driver)(nil)
	_ drivers.Labeler           = (*Driver)(nil)
	_ drivers.LeaseRecorder     = (*Driver)(nil)
	_ drivers.DepartureReporter = (*Driver)(nil)
)
