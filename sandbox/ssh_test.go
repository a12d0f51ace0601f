package sandbox_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/sandbox"
)

// sshBackend is a VM backend as Lima, vz and Hyper-V are for the data
// plane: exec and ports over a kept-open SSH connection (here to an
// in-process sshd running this host's sh).
type sshBackend struct{ *sshexec.Pool }

func (sshBackend) List(context.Context) ([]drivers.Instance, error) { return nil, nil }
func (sshBackend) Create(context.Context, drivers.Spec) error       { return nil }
func (sshBackend) Start(context.Context, drivers.Spec) error        { return nil }
func (sshBackend) Stop(context.Context, string) error               { return nil }
func (sshBackend) Delete(context.Context, string) error             { return nil }
func (sshBackend) Reconfigure(context.Context, drivers.Spec) error  { return nil }

func sshTarget(t *testing.T) *sandbox.Target {
	g := sshtest.Start(t)
	pool := sshexec.New(sshexec.Options{Target: func(context.Context, string) (sshexec.Target, error) {
		return sshexec.Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{g.KeyFile}}, nil
	}})
	t.Cleanup(func() { pool.Close() })
	return &sandbox.Target{Sandbox: "api", Instance: "sbf-01234567-api", DriverName: "ssh",
		Open: func() (drivers.Driver, error) { return sshBackend{pool}, nil }}
}

// Over SSH a guest path is the guest's own: the file tools use it as
// given (this stand-in guest's paths are this host's).
func TestFileToolsOverSSH(t *testing.T) {
	tgt := sshTarget(t)
	dir := t.TempDir()
	ctx := context.Background()
	p := filepath.Join(dir, "sub", "f.txt")
	w := sandbox.WriteRequest{Path: p, Data: []byte("over ssh"), MakeParents: true}
	if _, err := tgt.WriteFile(ctx, w); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "over ssh" {
		t.Fatalf("%q %v", b, err)
	}
	r, err := tgt.ReadFile(ctx, p, 5, 0)
	if err != nil || string(r.Data) != "ssh" {
		t.Fatalf("read = %+v %v", r, err)
	}
	l, err := tgt.ListFiles(ctx, dir, true, 0)
	if err != nil || paths(l.Entries) != "sub sub/f.txt" {
		t.Fatalf("list = %+v %v", l, err)
	}
}

func TestForwardOverSSH(t *testing.T) {
	tgt := sshTarget(t)
	f, err := tgt.Forward(t.Context(), 0, guestEcho(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := roundTrip(t, f.Addr(), "through the tunnel"); got != "through the tunnel" {
		t.Errorf("round trip = %q", got)
	}
}

// A command the guest has not is said in sbf's words, not the wrapper's
// ("sh: 1: eval: nosuchcmd: not found"), streamed and kept alike, with
// the shell's 127 (issue 40); over SSH as on the sim.
func TestCommandNotFoundHidesTheWrapper(t *testing.T) {
	sim, _ := simTarget(t)
	for name, tgt := range map[string]*sandbox.Target{"ssh": sshTarget(t), "sim": sim} {
		for _, stdin := range []io.Reader{nil, strings.NewReader("")} { // the guest shell, a session of its own
			var streamed strings.Builder
			res, err := tgt.Exec(context.Background(), drivers.ExecRequest{Command: "nosuchcmd --flag",
				StderrTo: &streamed, Stdin: stdin})
			want := "sbf: nosuchcmd: command not found in the guest\n"
			if err != nil || res.ExitCode != 127 || res.Stderr != want || streamed.String() != want ||
				res.StderrBytes != int64(len(want)) {
				t.Errorf("%s (stdin %v): %+v %v, streamed %q", name, stdin != nil, res, err, streamed.String())
			}
		}
	}
}
