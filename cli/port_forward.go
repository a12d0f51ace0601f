package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/sandbox"
)

// portPair is one [LOCAL:]REMOTE argument; Local 0 asks for a free port.
type portPair struct{ Local, Remote int }

// parsePortPair reads kubectl's forms: 8080 (the same port here),
// 9000:80, :80 and 0:80 (a free port here).
func parsePortPair(s string) (portPair, error) {
	local, remote, pair := strings.Cut(s, ":")
	if !pair {
		local, remote = s, s
	}
	r, err := strconv.Atoi(remote)
	if err != nil || sandbox.CheckPort("REMOTE", r, false) != nil {
		return portPair{}, usageErrorf("%q: the sandbox's port must be a number from 1 to 65535", s)
	}
	l := 0
	if local != "" {
		if l, err = strconv.Atoi(local); err != nil || sandbox.CheckPort("LOCAL", l, true) != nil {
			return portPair{}, usageErrorf("%q: the local port must be a number from 0 to 65535", s)
		}
	}
	return portPair{Local: l, Remote: r}, nil
}

// portForwardWatch is how often the lease is looked at while no
// connection comes (each connection looks at it first).
const portForwardWatch = 10 * time.Second

func (a *app) portForwardCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "port-forward NAME [LOCAL:]REMOTE...",
		Short: "Forward ports of this host's loopback to ports in a sandbox, until Ctrl-C",
		Long: "port-forward listens on 127.0.0.1 (never another address) and carries each connection to the\n" +
			"sandbox's own loopback, over the SSH connection sbf keeps: 8080 forwards the same port, 9000:80\n" +
			"local 9000 to the sandbox's 80, :80 a free local port (printed). It ends with Ctrl-C, or when\n" +
			"the sandbox's lease ends (exit 1).",
		Args:              args(cobra.MinimumNArgs(2)),
		ValidArgsFunction: a.completeSandbox,
		RunE: func(_ *cobra.Command, list []string) error {
			var pairs []portPair
			for _, s := range list[1:] {
				p, err := parsePortPair(s)
				if err != nil {
					return err
				}
				pairs = append(pairs, p)
			}
			return a.portForward(list[0], pairs)
		},
	}
}

func (a *app) portForward(name string, pairs []portPair) error {
	ws, err := a.workspace(nil)
	if err != nil {
		return err
	}
	eng, err := a.engine("port-forward", engineFlags{})
	if err != nil {
		return err
	}
	tgt, err := eng.Target(ws, name)
	if err != nil {
		return err
	}
	// Ctrl-C is ours before the first address is printed.
	ctx, stop := signal.NotifyContext(a.context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	admit := func() error { _, err := eng.Target(ws, name); return err }
	ended := make(chan struct{}, len(pairs))
	for _, p := range pairs {
		f, err := tgt.Forward(ctx, p.Local, p.Remote, admit)
		if err != nil {
			return err
		}
		defer a.noteForward(tgt, f, eng.Clock.Now())
		defer f.Close()
		go func() { <-f.Done(); ended <- struct{}{} }()
		fmt.Fprintf(a.stdout, "Forwarding from %s -> %d\n", f.Addr(), p.Remote)
	}
	// A lease that ends while no connection comes is noticed here.
	tick := eng.Clock.NewTicker(portForwardWatch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
		case <-tick.C():
			if admit() == nil {
				continue
			}
		}
		if err := admit(); err != nil {
			return fmt.Errorf("%w; its forwards are closed", err)
		}
		return fmt.Errorf("a forward to sandbox %s stopped; the others are closed", name)
	}
}

// noteForward records a forward once it has ended.
func (a *app) noteForward(tgt *sandbox.Target, f *sandbox.Forward, start time.Time) {
	a.note(tgt, sandbox.Event{Tool: "port-forward", Detail: fmt.Sprintf("%s connections=%d", f,
		f.Connections.Load()), Bytes: f.BytesIn.Load() + f.BytesOut.Load()}, start, nil)
}
