package main

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/promtext"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
)

// counters are the controller's metrics, served in Prometheus' text format by
// internal/promtext, read from what each pass reported (expiry.Report).
//
// The per-owner series (an owner is a VM's holder: driver.HeldBy) are bounded whatever the cluster
// holds: at most maxOwners owners have a series of their own, the rest are summed as
// owner="_other". VMs held is a gauge, so its named owners are the ones holding most at the
// last pass; expiries are a counter, so an owner keeps its series once it has one (a
// counter must not move between series) and owners past the bound count as _other. An
// owner's name is cut to maxOwnerLabel bytes: the annotation is a user's name under the
// shipped admission policy, but anything a VM's maker wrote without it.
type counters struct {
	mu                      sync.Mutex
	passes, expired, failed int
	unleased, overCeiling   int
	failing                 int   // passes failed in a row
	lastErr                 error // the last pass's failure
	garbled, watched        int
	lastPass                time.Time
	maxOwners               int
	held                    map[string]int // by owner, at the last pass that listed every namespace
	goneBy                  map[string]int // by owner label (bounded), since the start
}

// otherOwners is the owner label of the owners past the bound; a VM naming no owner is
// counted under owner="".
const otherOwners = "_other"

// maxOwnerLabel bounds an owner label's bytes.
const maxOwnerLabel = 128

func (m *counters) record(r expiry.Report) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes++
	m.expired += len(r.Expired)
	m.unleased += len(r.Unleased)
	m.overCeiling += len(r.OverCeiling)
	m.lastErr = r.Err
	if r.Err != nil {
		m.failed++
		m.failing++
	} else {
		m.failing = 0
	}
	m.garbled, m.watched, m.lastPass = len(r.Garbled), r.Watched, r.At
	if r.Held != nil {
		m.held = r.Held
	}
	if m.goneBy == nil {
		m.goneBy = map[string]int{}
	}
	for _, owner := range slices.Sorted(maps.Keys(r.Gone)) { // who gets the last series is no draw
		n, label := r.Gone[owner], ownerLabel(owner)
		if _, named := m.goneBy[label]; !named && len(m.goneBy)-m.others() >= m.maxOwners {
			label = otherOwners
		}
		m.goneBy[label] += n
	}
}

// others is 1 when the expiries have an _other series already.
func (m *counters) others() int {
	if _, ok := m.goneBy[otherOwners]; ok {
		return 1
	}
	return 0
}

// ownerLabel is an owner as a label value: cut to maxOwnerLabel bytes on a rune boundary.
func ownerLabel(owner string) string {
	if len(owner) <= maxOwnerLabel {
		return owner
	}
	cut := maxOwnerLabel
	for cut > 0 && !utf8.RuneStart(owner[cut]) {
		cut--
	}
	return owner[:cut]
}

// heldSeries is the VMs held by owner, the maxOwners holding most named (ties by name), the
// rest summed as otherOwners.
func (m *counters) heldSeries() map[string]int {
	byLabel := map[string]int{}
	for owner, n := range m.held {
		byLabel[ownerLabel(owner)] += n
	}
	owners := slices.SortedFunc(maps.Keys(byLabel), func(a, b string) int {
		return cmp.Or(cmp.Compare(byLabel[b], byLabel[a]), cmp.Compare(a, b))
	})
	out := map[string]int{}
	for i, owner := range owners {
		if i < m.maxOwners {
			out[owner] = byLabel[owner]
		} else {
			out[otherOwners] += byLabel[owner]
		}
	}
	return out
}

// handler serves the metrics.
func (m *counters) handler() http.Handler {
	locked := func(kind promtext.Kind, name, help string, labels []string,
		collect func(emit func(float64, ...string))) promtext.Family {
		return promtext.NewFunc(kind, name, help, labels, func(emit func(float64, ...string)) {
			m.mu.Lock()
			defer m.mu.Unlock()
			collect(emit)
		})
	}
	one := func(kind promtext.Kind, name, help string, v func() int) promtext.Family {
		return locked(kind, name, help, nil, func(emit func(float64, ...string)) { emit(float64(v())) })
	}
	byOwner := func(kind promtext.Kind, name, help string, series func() map[string]int) promtext.Family {
		return locked(kind, name, help, []string{"owner"}, func(emit func(float64, ...string)) {
			for owner, n := range series() {
				emit(float64(n), owner)
			}
		})
	}
	return promtext.Handler(
		one(promtext.Counter, "sbf_expiry_passes_total", "Passes over the sbf VMs.", func() int { return m.passes }),
		one(promtext.Counter, "sbf_expiry_failed_passes_total", "Passes that failed.", func() int { return m.failed }),
		one(promtext.Counter, "sbf_expiry_expired_total", "VMs deleted at their lease end or for carrying none.",
			func() int { return m.expired }),
		one(promtext.Counter, "sbf_expiry_unleased_total", "VMs deleted for carrying no lease end past the grace.",
			func() int { return m.unleased }),
		one(promtext.Counter, "sbf_expiry_over_ceiling_total", "VMs deleted past their owner's ceiling.",
			func() int { return m.overCeiling }),
		one(promtext.Gauge, "sbf_expiry_garbled_vms", "VMs whose lease end does not parse (left running).",
			func() int { return m.garbled }),
		one(promtext.Gauge, "sbf_expiry_leased_vms", "VMs with a lease end still ahead.",
			func() int { return m.watched }),
		locked(promtext.Gauge, "sbf_expiry_last_pass_seconds", "When the last pass ran (Unix seconds).", nil,
			func(emit func(float64, ...string)) {
				if !m.lastPass.IsZero() {
					emit(float64(m.lastPass.Unix()))
				}
			}),
		byOwner(promtext.Gauge, "sbf_owner_vms", "sbf VMs held by each owner (claimed-by, else created-by) at the last pass.",
			m.heldSeries),
		byOwner(promtext.Counter, "sbf_owner_expired_total",
			"VMs the controller deleted (lease ended or missing, past the ceiling), by owner (its holder).",
			func() map[string]int { return m.goneBy }),
	)
}

// failingPasses is how many passes in a row must fail before /healthz says so: one may fail
// on a conflict or a dropped connection and the next heal it.
const failingPasses = 3

// healthz fails while the controller's passes fail (RBAC taken away, KubeVirt's CRDs gone, a
// fence it cannot pass): serve-leader's probes ask it (--command-health), so the kubelet
// sees a controller that enforces nothing.
func (m *counters) healthz(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing >= failingPasses {
		http.Error(w, fmt.Sprintf("the last %d passes failed: %v", m.failing, m.lastErr), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok: %d passes, %d failed in a row\n", m.passes, m.failing)
}
