package reconcile

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// probeTimeout bounds each sandbox's `true` in a health check.
const probeTimeout = 10 * time.Second

// SandboxHealth is one sandbox's answer to a health check.
type SandboxHealth struct {
	Name      string     `json:"sandbox"`
	Instance  string     `json:"instance"`
	Driver    string     `json:"driver"`
	Phase     string     `json:"phase"`
	Live      string     `json:"live_status"`
	ExpiresAt *time.Time `json:"expires_at"`
	LeaseLeft int64      `json:"lease_seconds_left"`
	// Status is ok (it answered a command), unreachable (its VM runs but
	// a command does not), booting (its VM runs, its guest is not ready
	// yet), down (it holds a lease but its VM does not run), or no lease
	// (nothing is expected of it).
	Status string `json:"status"`
	ExecMS int64  `json:"exec_ms"`
	Error  string `json:"error,omitempty"`
}

// Health observes a workspace (as plan does, changing nothing) and runs
// `true` in every sandbox that holds a live lease. healthy is false when
// one of those is down or does not answer.
func (e *Engine) Health(ctx context.Context, ws spec.Options) (out []SandboxHealth, healthy bool, err error) {
	res, err := e.Plan(ctx, ws, Options{Intent: Reconcile{}, Ended: true}) // "no lease" rows for ended ones too
	if res == nil {
		return nil, false, err
	}
	now := e.Clock.Now()
	healthy = true
	for _, st := range res.Status() {
		h := SandboxHealth{Name: st.Name, Instance: st.Instance, Driver: st.Driver, Phase: string(st.Phase),
			Live: st.Live, ExpiresAt: st.ExpiresAt, Status: "no lease", Error: st.LastError}
		if CheckLease(res.Resolved, st.Name, now) == nil && st.ExpiresAt != nil {
			h.LeaseLeft = int64(st.ExpiresAt.Sub(now).Seconds())
			h.Status = e.probe(ctx, ws, st, &h)
			healthy = healthy && h.Status == "ok"
		}
		out = append(out, h)
	}
	return out, healthy, nil
}

func (e *Engine) probe(ctx context.Context, ws spec.Options, st SandboxStatus, h *SandboxHealth) string {
	switch st.Live {
	case "running":
	case string(drivers.Booting):
		return "booting"
	default:
		return "down"
	}
	tgt, err := e.Target(ws, st.Name)
	if err == nil {
		var took time.Duration
		took, err = tgt.Probe(ctx, probeTimeout)
		h.ExecMS = took.Milliseconds()
	}
	if err != nil {
		h.Error = err.Error()
		return "unreachable"
	}
	return "ok"
}
