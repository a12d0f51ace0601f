package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// stampedLines keeps each line written to it with the time it arrived.
type stampedLines struct {
	mu    sync.Mutex
	part  []byte
	lines []stampedLine
}

type stampedLine struct {
	at   time.Time
	text string
}

func (s *stampedLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.lines = append(s.lines, stampedLine{now, string(s.part[:i])})
		s.part = s.part[i+1:]
	}
}

func (s *stampedLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		fmt.Fprintf(&b, "%s %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	return b.String()
}

// deletions are the times this replica's controller deleted a VM.
func (s *stampedLines) deletions() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, l := range s.lines {
		if strings.Contains(l.text, "controller: VirtualMachine ") && strings.Contains(l.text, ": deleted: ") {
			out = append(out, l.at)
		}
	}
	return out
}

// startController replica runs `serve-leader --lease sbf-controller -- sbf-kubevirt
// controller` as the shipped Deployment does, with short timings.
func startControllerReplica(t *testing.T, s space, id, kubeconfig string) (*exec.Cmd, *stampedLines) {
	t.Helper()
	args := append([]string{"serve-leader", "--namespace", s.ns, "--lease", "sbf-controller", "--identity", id},
		short...)
	args = append(args, "--", plugin, "controller", "--namespaces", s.ns, "--resync", "1s")
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out := &stampedLines{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		cmd.Process.Kill()
		<-exited
	})
	return cmd, out
}

// Two controller replicas under serve-leader while VMs past their lease keep coming (one
// every 100 ms): when the leader's supervisor is frozen (SIGSTOP, the loop left running),
// cut off from the API server or killed, its controller deletes nothing once the follower
// may: every deletion by a comes before the first by b. The frozen case is the one the
// fence is for (the loop checks the Lease before each deletion); before it, a's loop went
// on deleting for the whole freeze.
func TestOneControllerActsWhenTheLeaderIsFrozenCutOffOrKilled(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"frozen", "partitioned", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			s := newSpace(t, quick)
			host, err := url.Parse(cluster.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			relay := newPartition(t, host.Host)
			via := rest.CopyConfig(cluster.Config)
			via.Host = "https://" + relay.addr
			a, outA := startControllerReplica(t, s, "a", kubetest.Kubeconfig(t, via))
			waitFor(t, "a to lead", func() bool { return leaseHolder(t, s, "sbf-controller") == "a" })
			_, outB := startControllerReplica(t, s, "b", s.kubeconfig)
			waitFor(t, "b to follow", func() bool { return strings.Contains(outB.String(), "held by a") })

			ctx, stopFeeding := context.WithCancel(context.Background())
			fed := make(chan struct{})
			go func() { defer close(fed); feedExpired(ctx, t, s) }()
			waitFor(t, "a to delete", func() bool { return len(outA.deletions()) > 0 })
			var at time.Time
			switch at = time.Now(); how {
			case "frozen":
				syscall.Kill(a.Process.Pid, syscall.SIGSTOP)
			case "partitioned":
				relay.cut.Store(true)
			case "killed":
				a.Process.Kill()
			}
			waitFor(t, "b to delete", func() bool { return len(outB.deletions()) > 0 })
			time.Sleep(3 * leaseDuration) // a's loop has every chance to act meanwhile
			stopFeeding()
			<-fed
			syscall.Kill(a.Process.Pid, syscall.SIGCONT)

			delA, delB := outA.deletions(), outB.deletions()
			lastA, firstB := delA[len(delA)-1], delB[0]
			t.Logf("%s at 0: a's last deletion at %s, b's first at %s: overlap %s (%d by a, %d by b)", how,
				lastA.Sub(at).Round(time.Millisecond), firstB.Sub(at).Round(time.Millisecond),
				max(0, lastA.Sub(firstB)).Round(time.Millisecond), len(delA), len(delB))
			if !lastA.Before(firstB) {
				t.Errorf("both controllers deleted VMs for %s\na:\n%s\nb:\n%s", lastA.Sub(firstB), outA, outB)
			}
		})
	}
}

// feedExpired makes a VM past its lease every 100 ms until ctx ends.
func feedExpired(ctx context.Context, t *testing.T, s space) {
	halted := kv.RunStrategyHalted
	for i := 0; ctx.Err() == nil; i++ {
		vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("past-%d", i), Namespace: s.ns,
			Labels:      map[string]string{driver.LabelManagedBy: driver.ManagedBy},
			Annotations: map[string]string{driver.AnnotationLeaseEnd: "2026-01-01T00:00:00Z"}},
			Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
		if err := s.admin.Create(ctx, vm); err != nil && ctx.Err() == nil {
			t.Errorf("making %s: %v", vm.Name, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func leaseHolder(t *testing.T, s space, lease string) string {
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	l, err := cs.CoordinationV1().Leases(s.ns).Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
