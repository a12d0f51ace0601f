package leader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandboxforge/sbf/internal/clock"
)

// What Run tells its command, so that the command can prove, before each write, that its
// replica still holds the Lease (Fence).
const (
	EnvLease         = "SBF_LEADER_LEASE"          // namespace/name
	EnvIdentity      = "SBF_LEADER_IDENTITY"       // the holder's identity this replica writes
	EnvRenewDeadline = "SBF_LEADER_RENEW_DEADLINE" // a Go duration
)

// ErrNotLeading is a Fence that cannot prove this replica holds the Lease.
var ErrNotLeading = errors.New("cannot prove this replica holds the Lease")

// Fence is the Lease as a command run by Run checks it: it may write only while the Lease
// names its replica and was renewed less than RenewDeadline ago. Run stops the command at
// the same deadline, and another replica may take the Lease only LeaseDuration after the
// renewal; the fence covers a supervisor that cannot stop the command (frozen: SIGSTOP, or
// starved), when the command would otherwise go on acting after another took over. The
// renewal time is the supervisor's clock, the same host's as the command's.
type Fence struct {
	Client        kubernetes.Interface
	Namespace     string
	Lease         string
	Identity      string
	RenewDeadline time.Duration
	Clock         clock.Clock
}

// FenceFromEnv is the fence Run's environment describes; nil when the command does not run
// under Run (no EnvLease): it then acts alone, as its operator decided.
func FenceFromEnv(cfg *rest.Config, getenv func(string) string) (*Fence, error) {
	lease := getenv(EnvLease)
	if lease == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(lease, "/")
	deadline, err := time.ParseDuration(getenv(EnvRenewDeadline))
	if !ok || ns == "" || name == "" || err != nil || deadline <= 0 || getenv(EnvIdentity) == "" {
		return nil, fmt.Errorf("%s=%q, %s=%q, %s=%q: not a Lease, identity and deadline to fence by", EnvLease, lease,
			EnvIdentity, getenv(EnvIdentity), EnvRenewDeadline, getenv(EnvRenewDeadline))
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Fence{Client: cs, Namespace: ns, Lease: name, Identity: getenv(EnvIdentity),
		RenewDeadline: deadline, Clock: clock.Real{}}, nil
}

// Check reads the Lease and fails (ErrNotLeading) unless it names this replica and its last
// renewal is younger than RenewDeadline, counted after the read returned.
func (f *Fence) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.RenewDeadline/2)
	defer cancel()
	l, err := f.Client.CoordinationV1().Leases(f.Namespace).Get(ctx, f.Lease, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%w: reading Lease %s/%s: %w", ErrNotLeading, f.Namespace, f.Lease, err)
	}
	now := f.Clock.Now()
	switch {
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != f.Identity:
		holder := "nobody"
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			holder = *l.Spec.HolderIdentity
		}
		return fmt.Errorf("%w: Lease %s/%s is held by %s, not %s", ErrNotLeading, f.Namespace, f.Lease, holder,
			f.Identity)
	case l.Spec.RenewTime == nil || now.Sub(l.Spec.RenewTime.Time) >= f.RenewDeadline:
		at := "never"
		if l.Spec.RenewTime != nil {
			at = now.Sub(l.Spec.RenewTime.Time).Round(time.Millisecond).String() + " ago"
		}
		return fmt.Errorf("%w: Lease %s/%s was renewed %s (deadline %s)", ErrNotLeading, f.Namespace, f.Lease, at,
			f.RenewDeadline)
	}
	return nil
}
