package integration

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// partition is a TCP relay to the API server that can be cut: from then on every byte
// either way is dropped and new connections are held open unanswered, as a network
// partition looks to a client (requests hang until their deadline, nothing is refused).
type partition struct {
	addr string
	cut  atomic.Bool
}

func newPartition(t *testing.T, target string) *partition {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partition{addr: ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if p.cut.Load() {
				go io.Copy(io.Discard, c)
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, up)
			mu.Unlock()
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

// pipe copies from src to dst until the partition is cut, then swallows what src sends.
func (p *partition) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stamp is the time a log line ends with.
func stamp(t *testing.T, line string) time.Time {
	t.Helper()
	f := strings.Fields(line)
	secs, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	return time.Unix(0, int64(secs*1e9))
}

// A leader cut off from the API server stops its loop before the follower's starts: the
// log's "stop a" comes before "start b", with the shipped timings (15 s Lease, 10 s renew
// deadline, 2 s retry) and with short ones. (Before the leader counted its own renew
// deadline, the loops overlapped 4.7 s and 1.0 s: client-go signals the command only after
// its release of the Lease, which against a partitioned API takes a renew deadline more.)
func TestALeaderCutOffFromTheAPIStopsBeforeTheFollowerStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timings []string
	}{{"shipped timings", nil}, {"short timings", short}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpace(t, quick)
			host, err := url.Parse(cluster.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			p := newPartition(t, host.Host)
			via := rest.CopyConfig(cluster.Config)
			via.Host = "https://" + p.addr
			log := filepath.Join(t.TempDir(), "acting.log")
			a := startReplicaWith(t, s, "a", log, kubetest.Kubeconfig(t, via), tc.timings)
			waitFor(t, "replica a to lead", func() bool { return len(acting(t, log)) == 1 })
			b := startReplicaWith(t, s, "b", log, s.kubeconfig, tc.timings)
			waitFor(t, "replica b to see a's Lease", func() bool { return strings.Contains(b.stderr.String(), "held by a") })

			p.cut.Store(true)
			cut := time.Now()
			waitFor(t, "replica b to take over", func() bool {
				for _, l := range acting(t, log) {
					if strings.HasPrefix(l, "start b ") {
						return true
					}
				}
				return false
			})
			var stopA, startB time.Time
			for _, l := range acting(t, log) {
				switch {
				case strings.HasPrefix(l, "stop a "):
					stopA = stamp(t, l)
				case strings.HasPrefix(l, "start b "):
					startB = stamp(t, l)
				}
			}
			if stopA.IsZero() {
				t.Fatalf("b started while a's loop never stopped: %q\n%s", acting(t, log), a.stderr.String())
			}
			t.Logf("cut at 0: a's loop stopped at %s, b's started at %s (margin %s)",
				stopA.Sub(cut).Round(time.Millisecond), startB.Sub(cut).Round(time.Millisecond),
				startB.Sub(stopA).Round(time.Millisecond))
			if !stopA.Before(startB) {
				t.Errorf("the loops overlapped %s: %q", stopA.Sub(startB), acting(t, log))
			}
		})
	}
}
