// Package leader runs a command only while this process holds a coordination.k8s.io
// Lease, so that of several replicas of sbf's loop in a cluster exactly one acts: the
// elected replica runs `sbf reconcile --watch` as a child process and stops it before it
// gives the Lease up. The child is sbf itself, unchanged: the loop knows nothing of the
// election.
//
// Safety rests on the command being stopped before another replica can hold the Lease:
//   - on shutdown (SIGTERM) the command is stopped first, then the Lease released, and
//     the next replica takes over at once;
//   - the command is sent SIGTERM once RenewDeadline has passed since the last renewal this
//     replica sent (counted here, not by client-go's loop, whose own give-up comes up to a
//     RetryPeriod later and is followed by its release, itself up to a RenewDeadline against
//     a partitioned API), and SIGKILL after Grace. Another replica can acquire the Lease
//     only LeaseDuration after it saw that renewal, which is after it was sent; so with
//     Grace below LeaseDuration - RenewDeadline the command is down first;
//   - the Lease is never released (ReleaseOnCancel) while the command may still act: the
//     release waits for it to be down;
//   - when this process dies the kernel kills the command (Linux's parent-death signal),
//     and the Lease expires after LeaseDuration.
package leader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Options configure Run.
type Options struct {
	Config    *rest.Config
	Namespace string // where the Lease is
	Lease     string // its name
	Identity  string // this replica's name (the pod's)

	LeaseDuration time.Duration // default 15s
	RenewDeadline time.Duration // default 10s
	RetryPeriod   time.Duration // default 2s
	Grace         time.Duration // SIGTERM to SIGKILL; default half of LeaseDuration - RenewDeadline

	Command        []string
	Stdout, Stderr io.Writer
	Logf           func(format string, args ...any)
	// Clock times the renewals and the grace (default the wall clock); client-go's election
	// keeps its own.
	Clock clock.Clock
}

// ErrLost is returned when the Lease was lost while leading: the command was stopped.
var ErrLost = errors.New("lost the Lease; the command was stopped")

func (o *Options) defaults() error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	if o.Grace == 0 {
		o.Grace = (o.LeaseDuration - o.RenewDeadline) / 2
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	switch {
	case len(o.Command) == 0:
		return errors.New("no command to run while leading")
	case o.Namespace == "" || o.Lease == "" || o.Identity == "":
		return errors.New("the Lease's namespace and name and this replica's identity are required")
	case o.Grace >= o.LeaseDuration-o.RenewDeadline:
		return fmt.Errorf("grace %s must be shorter than lease duration - renew deadline (%s)", o.Grace,
			o.LeaseDuration-o.RenewDeadline)
	}
	return nil
}

// Run campaigns for the Lease and runs the command while holding it. It returns nil when
// ctx ends (the command stopped, then the Lease released), ErrLost when the Lease was
// lost, or the command's failure when it ended on its own (the Lease released first).
// Either error means: exit, and let the Deployment start a fresh replica.
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		result  error
		leading bool
		stopped = make(chan struct{})
	)
	lock := &guardedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Lease},
		Client:    cs.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity}},
		clock: o.Clock, renewed: make(chan struct{}, 1), down: stopped}
	// The election's context ends only once the command has stopped, so that the Lease is
	// never released (ReleaseOnCancel) while the command may still act.
	electCtx, endElection := context.WithCancel(context.Background())
	defer endElection()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.Lease, ReleaseOnCancel: true,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				leading = true
				mu.Unlock()
				o.Logf("leading: holding Lease %s/%s as %s; starting %v", o.Namespace, o.Lease, o.Identity, o.Command)
				err := runWhileLeading(ctx, leadCtx, o, lock)
				mu.Lock()
				result = err
				mu.Unlock()
				close(stopped)
				endElection()
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != o.Identity {
					o.Logf("following: Lease %s/%s is held by %s", o.Namespace, o.Lease, id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			endElection() // a follower just stops campaigning
		}
	}()
	le.Run(electCtx)
	mu.Lock()
	wasLeading := leading
	mu.Unlock()
	if wasLeading {
		<-stopped // Run returns on a lost Lease before the command is down
	}
	return result
}

// runWhileLeading runs the command until it ends, RenewDeadline passes without a renewal,
// the election says the Lease is lost (leadCtx) or this replica shuts down (ctx), and stops
// it in all but the first case.
func runWhileLeading(ctx, leadCtx context.Context, o Options, lock *guardedLock) error {
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	// What the command needs to prove, before each write, that this replica still leads
	// (Fence): when this process cannot stop it in time (frozen), the Lease says so.
	cmd.Env = append(os.Environ(), EnvLease+"="+o.Namespace+"/"+o.Lease, EnvIdentity+"="+o.Identity,
		EnvRenewDeadline+"="+o.RenewDeadline.String())
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %v: %w", o.Command, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	untilDeadline := func() time.Duration { return lock.lastRenewal().Add(o.RenewDeadline).Sub(o.Clock.Now()) }
	deadline := o.Clock.NewTimer(untilDeadline())
	defer deadline.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("%v ended while leading: %v", o.Command, err)
		case <-lock.renewed:
			deadline.Reset(untilDeadline())
		case <-deadline.C():
			if left := untilDeadline(); left > 0 {
				deadline.Reset(left) // a renewal came in since the timer was set
				continue
			}
			stop(cmd, exited, o.Clock, o.Grace)
			o.Logf("Lease %s/%s not renewed for %s: stopped %v before another replica may take it",
				o.Namespace, o.Lease, o.RenewDeadline, o.Command)
			return ErrLost
		case <-leadCtx.Done():
			stop(cmd, exited, o.Clock, o.Grace)
			o.Logf("lost Lease %s/%s: stopped %v", o.Namespace, o.Lease, o.Command)
			return ErrLost
		case <-ctx.Done():
			stop(cmd, exited, o.Clock, o.Grace)
			o.Logf("shutting down: stopped %v; releasing Lease %s/%s", o.Command, o.Namespace, o.Lease)
			return nil
		}
	}
}

// stop sends the command's process group SIGTERM, and SIGKILL after grace.
func stop(cmd *exec.Cmd, exited <-chan error, c clock.Clock, grace time.Duration) {
	signalGroup(cmd, syscall.SIGTERM)
	t := c.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C():
		signalGroup(cmd, syscall.SIGKILL)
		<-exited
	}
}

// guardedLock is the Lease as the election writes it, watched: it notes when each
// successful acquire or renewal was sent (the leader's own deadline counts from there),
// and holds a release (an update that names no holder) until the command is down.
type guardedLock struct {
	resourcelock.Interface
	clock   clock.Clock
	renewed chan struct{} // a renewal since runWhileLeading last looked
	down    <-chan struct{}

	mu   sync.Mutex
	sent time.Time
}

func (g *guardedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := g.clock.Now()
	err := g.Interface.Create(ctx, rec)
	if err == nil {
		g.note(sent)
	}
	return err
}

func (g *guardedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		select {
		case <-g.down:
		case <-ctx.Done():
			return fmt.Errorf("not releasing the Lease while the command may still act: %w", ctx.Err())
		}
		return g.Interface.Update(ctx, rec)
	}
	sent := g.clock.Now()
	err := g.Interface.Update(ctx, rec)
	if err == nil {
		g.note(sent)
	}
	return err
}

func (g *guardedLock) note(sent time.Time) {
	g.mu.Lock()
	g.sent = sent
	g.mu.Unlock()
	select {
	case g.renewed <- struct{}{}:
	default:
	}
}

func (g *guardedLock) lastRenewal() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent
}
