package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Short lease timings, so a takeover happens within seconds.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 250 * time.Millisecond
)

// replica is one `sbf-kubevirt serve-leader` process whose command logs when it starts
// and stops acting.
type replica struct {
	id     string
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	exited chan struct{} // closed once it exited, with err set
	err    error
}

var short = []string{"--lease-duration", leaseDuration.String(), "--renew-deadline", renewDeadline.String(),
	"--retry-period", retryPeriod.String()}

// startReplica runs a replica with short timings (startReplicaWith: any) whose "loop"
// appends "start ID PID TIME" to log when it starts and "stop ID TIME" when it is told to
// stop (TIME in seconds since the epoch, to the nanosecond).
func startReplica(t *testing.T, s space, id, log string) *replica {
	return startReplicaWith(t, s, id, log, s.kubeconfig, short)
}

func startReplicaWith(t *testing.T, s space, id, log, kubeconfig string, timings []string) *replica {
	t.Helper()
	loop := fmt.Sprintf(`echo "start %s $$ $(date +%%s.%%N)" >> %s; `+
		`trap 'echo "stop %s $(date +%%s.%%N)" >> %s; exit 0' TERM; while :; do sleep 0.05; done`, id, log, id, log)
	args := append([]string{"serve-leader", "--namespace", s.ns, "--lease", "sbf-loop", "--identity", id}, timings...)
	cmd := exec.Command(plugin, append(args, "--", "sh", "-c", loop)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	r := &replica{id: id, cmd: cmd, stderr: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// waitFor polls cond until it holds; a minute without it fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// acting reads the log: who started (with their loop's pid) and who stopped, in order.
func acting(t *testing.T, log string) []string {
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func holder(t *testing.T, s space) string {
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	l, err := cs.CoordinationV1().Leases(s.ns).Get(context.Background(), "sbf-loop", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Two replicas: only the leader's loop runs; killing the leader stops its loop with it,
// and the other replica takes over once the Lease runs out; a replica shut down
// gracefully stops its loop and then releases the Lease, which a third takes at once.
func TestTwoReplicasOnlyTheLeaderActs(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	log := filepath.Join(t.TempDir(), "acting.log")
	a := startReplica(t, s, "a", log)
	waitFor(t, "replica a to lead", func() bool { return len(acting(t, log)) == 1 })
	b := startReplica(t, s, "b", log)
	waitFor(t, "replica b to see a's Lease", func() bool { return strings.Contains(b.stderr.String(), "held by a") })
	if got := acting(t, log); len(got) != 1 || !strings.HasPrefix(got[0], "start a ") {
		t.Fatalf("with a leading and b following, the log reads %q", got)
	}
	loopA, _ := strconv.Atoi(strings.Fields(acting(t, log)[0])[2])

	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	killed := time.Now()
	waitFor(t, "a's loop to die with it", func() bool { return !alive(loopA) })
	waitFor(t, "replica b to take over", func() bool { return len(acting(t, log)) == 2 })
	takeover := time.Since(killed)
	got := acting(t, log)
	if !strings.HasPrefix(got[1], "start b ") || holder(t, s) != "b" {
		t.Fatalf("after a was killed the log reads %q and the Lease is held by %q", got, holder(t, s))
	}
	t.Logf("b took over %s after a was killed (lease duration %s, retry period %s)",
		takeover.Round(time.Millisecond), leaseDuration, retryPeriod)
	if takeover > leaseDuration+4*retryPeriod+time.Second {
		t.Errorf("b took over after %s; the Lease lasts %s", takeover, leaseDuration)
	}

	c := startReplica(t, s, "c", log)
	waitFor(t, "replica c to see b's Lease", func() bool { return strings.Contains(c.stderr.String(), "held by b") })
	b.cmd.Process.Signal(syscall.SIGTERM)
	if <-b.exited; b.err != nil {
		t.Errorf("b's graceful shutdown: %v\n%s", b.err, b.stderr.String())
	}
	if h := holder(t, s); h == "b" {
		t.Errorf("b shut down but the Lease is still held by b; b said:\n%s", b.stderr.String())
	}
	waitFor(t, "replica c to take over from b", func() bool { return len(acting(t, log)) == 4 })
	got = acting(t, log)
	if !strings.HasPrefix(got[2], "stop b ") || !strings.HasPrefix(got[3], "start c ") {
		t.Fatalf("after b's graceful shutdown the log reads %q; want b's loop stopped, then c's started", got)
	}
	// The handover: from b's loop stopping to c's starting, both as the loops wrote them.
	gap := logTime(t, got[3], 3).Sub(logTime(t, got[2], 2))
	t.Logf("graceful handover: c's loop started %s after b's stopped (retry period %s)",
		gap.Round(time.Millisecond), retryPeriod)
	// Sooner than b's Lease could have run out (b renewed it at most a retry period before):
	// c took a released Lease, not an expired one.
	if gap < 0 || gap >= leaseDuration-retryPeriod {
		t.Errorf("c's loop started %s after b's stopped: b's Lease ran out rather than being released", gap)
	}
}

// logTime reads the TIME field (seconds since the epoch, to the nanosecond) of an acting
// log line.
func logTime(t *testing.T, line string, field int) time.Time {
	t.Helper()
	f := strings.Fields(line)
	if len(f) <= field {
		t.Fatalf("no time in %q", line)
	}
	sec, frac, _ := strings.Cut(f[field], ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("a bad time in %q", line)
	}
	return time.Unix(s, ns)
}

// The probes the Deployments use: serve-leader answers /healthz and /readyz, leader or
// follower alike.
func TestServeLeaderAnswersProbes(t *testing.T) {
	s := newSpace(t, quick)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	log := filepath.Join(t.TempDir(), "acting.log")
	startReplicaWith(t, s, "a", log, s.kubeconfig, append([]string{"--health-addr", addr}, short...))
	for _, path := range []string{"/healthz", "/readyz"} {
		var res *http.Response
		waitFor(t, path, func() bool {
			res, err = http.Get("http://" + addr + path)
			return err == nil
		})
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, res.Status)
		}
	}
}

// serve-leader with no --namespace, POD_NAMESPACE or SBF_KUBEVIRT_NAMESPACE keeps its Lease
// in the namespace of the kubeconfig's context, as kubectl and the driver do.
func TestServeLeaderTakesTheKubeconfigsNamespace(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	kc, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = s.ns
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve-leader", "--identity", "k1"}, short...)
	cmd := exec.Command(plugin, append(args, "--", "sleep", "60")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + path}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "the Lease in the context's namespace", func() bool {
		if strings.Contains(out.String(), "required") {
			t.Fatalf("serve-leader: %s", out)
		}
		return holder(t, s) == "k1"
	})
}
