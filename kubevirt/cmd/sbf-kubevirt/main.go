// Command sbf-kubevirt is sbf's KubeVirt backend as a program of its own, so that sbf never
// links client-go and controller-runtime (their package init alone costs ~2.8 MB and
// ~55 ms, paid by every sbf command otherwise).
//
//	sbf-kubevirt plugin        serve the driver to sbf on stdin/stdout (sbf starts it)
//	sbf-kubevirt serve-leader  run a command (sbf reconcile --watch) only while holding a Lease
//	sbf-kubevirt controller    halt and delete every sbf VM past its lease (run under serve-leader)
//	sbf-kubevirt holders       who holds which sbf VM in a namespace, from the VMs themselves
//	sbf-kubevirt version
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/external"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/leader"
)

// version is set at link time (-X main.version=..., by make sbf-kubevirt, the release and
// the image); a plain go build falls back to what Go embeds (versionString).
var version = ""

// versionString is the release's version, else the module version or VCS revision Go
// recorded, else "devel": never empty, so a report names what ran.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev + dirty
}

const usage = "usage: sbf-kubevirt plugin | serve-leader [flags] -- COMMAND [ARGS...] | controller [flags] |\n" +
	"       holders [--namespace NS] [--json] | version"

func main() {
	// The libraries' own logging would only interleave with sbf's output.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "plugin":
		err = plugin(ctx)
	case "serve-leader":
		err = serveLeader(ctx, os.Args[2:])
	case "controller":
		err = controller(ctx, os.Args[2:])
	case "holders":
		err = holders(ctx, os.Args[2:], os.Stdout)
	case "version":
		fmt.Println("sbf-kubevirt", versionString(), "protocol", external.ProtocolVersion)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbf-kubevirt:", err)
		os.Exit(1)
	}
}

// plugin serves the driver until sbf closes stdin. A driver that cannot be built (no
// cluster configured) still answers, with that error, so sbf can show its next steps.
func plugin(ctx context.Context) error {
	var p external.Plugin
	d, err := driver.New(driver.Options{Getenv: os.Getenv, Clock: clock.Real{}})
	var fence *leader.Fence
	if err == nil {
		fence, err = leader.FenceFromEnv(d.Config(), os.Getenv)
	}
	switch {
	case err != nil:
		p = broken{err}
	case fence != nil:
		p = fenced{Driver: d, fence: fence}
	default:
		p = d
	}
	return external.Serve(ctx, os.Stdin, os.Stdout, p)
}

// broken answers every call with why the driver could not be built.
type broken struct{ err error }

func (b broken) Hello(context.Context, external.Hello) (external.HelloResult, error) {
	return external.HelloResult{}, b.err
}
func (b broken) List(context.Context) ([]drivers.Instance, error)            { return nil, b.err }
func (b broken) Create(context.Context, drivers.Spec) error                  { return b.err }
func (b broken) Start(context.Context, drivers.Spec) error                   { return b.err }
func (b broken) Stop(context.Context, string) error                          { return b.err }
func (b broken) Delete(context.Context, string) error                        { return b.err }
func (b broken) Reconfigure(context.Context, drivers.Spec) error             { return b.err }
func (b broken) Validate(context.Context, drivers.Spec) error                { return nil }
func (b broken) MarkSpare(context.Context, string, drivers.SpareLabel) error { return b.err }
func (b broken) Claim(context.Context, string, drivers.Owner) error          { return b.err }
func (b broken) RecordLease(context.Context, string, time.Time) error        { return b.err }
func (b broken) SSH(context.Context, string) (external.SSHEndpoint, error) {
	return external.SSHEndpoint{}, b.err
}
func (b broken) Diagnose(context.Context, []drivers.Spec) drivers.Diagnosis {
	d := drivers.Diagnosis{Driver: driver.Name, Summary: "cannot reach a cluster"}
	d.Add(drivers.CheckFromError("api", b.err))
	d.Finish()
	return d
}
