package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// Stats are what a guest's /proc and df say about it, sampled by one
// command: CPU use over a fifth of a second, load, memory, the root
// filesystem and uptime. A guest without /proc (a sim on macOS) leaves
// those zero and Partial set. On a backend whose guest is this host (the
// sim) they are this host's figures, and SharedWithHost says so.
type Stats struct {
	CPUs           int       `json:"cpus"`
	CPUPercent     float64   `json:"cpu_percent"`
	Load           []float64 `json:"load"` // 1, 5 and 15 minutes
	MemoryTotal    int64     `json:"memory_total_bytes"`
	MemoryAvail    int64     `json:"memory_available_bytes"`
	MemoryUsed     int64     `json:"memory_used_bytes"`
	DiskPath       string    `json:"disk_path"`
	DiskTotal      int64     `json:"disk_total_bytes"`
	DiskUsed       int64     `json:"disk_used_bytes"`
	DiskAvail      int64     `json:"disk_available_bytes"`
	UptimeSeconds  float64   `json:"uptime_seconds"`
	Processes      int       `json:"processes"`
	SharedWithHost bool      `json:"shared_with_host"`
	Partial        bool      `json:"partial"`
}

const statsTimeout = 30 * time.Second

// statsScript prints one section per source, each after a "@@NAME" line.
const statsScript = `echo @@stat1; head -n 1 /proc/stat 2>/dev/null
sleep 0.2
echo @@stat2; head -n 1 /proc/stat 2>/dev/null
echo @@loadavg; cat /proc/loadavg 2>/dev/null
echo @@uptime; cat /proc/uptime 2>/dev/null
echo @@meminfo; grep -E '^(MemTotal|MemAvailable):' /proc/meminfo 2>/dev/null
echo @@cpus; getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null
echo @@procs; ls -d /proc/[0-9]* 2>/dev/null | wc -l
echo @@df; df -Pk -- "$d" 2>/dev/null | tail -n 1
true`

// Stats samples the guest.
func (t *Target) Stats(ctx context.Context) (Stats, error) {
	drv, err := t.Driver()
	if err != nil {
		return Stats{}, err
	}
	disk, err := t.mapPath("/")
	if err != nil {
		return Stats{}, err
	}
	res, err := t.ExecBrokered(ctx, drivers.ExecRequest{Command: "d=" + shellquote.Quote(disk) + "\n" + statsScript,
		Timeout: statsTimeout})
	if err != nil {
		return Stats{}, fmt.Errorf("reading the stats of %s: %w", t.Sandbox, err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return Stats{}, coded.New(coded.BackendCommand, map[string]any{"exit_code": res.ExitCode,
			"stderr": coded.Clip(res.Stderr)}, "reading the stats of %s failed: %s", t.Sandbox, coded.Clip(res.Stderr))
	}
	s := parseStats(sections(res.Stdout))
	s.DiskPath = "/"
	if drivers.CapabilitiesOf(drv).HostShell {
		s.SharedWithHost = true
	}
	return s, nil
}

// sections splits the script's output at its "@@NAME" lines.
func sections(out string) map[string][]string {
	got := map[string][]string{}
	name := ""
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "@@"); ok {
			name = n
			continue
		}
		if strings.TrimSpace(line) != "" {
			got[name] = append(got[name], line)
		}
	}
	return got
}

func parseStats(sec map[string][]string) Stats {
	var s Stats
	percent, ok := cpuPercent(first(sec["stat1"]), first(sec["stat2"]))
	s.CPUPercent = percent
	if f := strings.Fields(first(sec["loadavg"])); len(f) >= 3 {
		s.Load = []float64{atof(f[0]), atof(f[1]), atof(f[2])}
	} else {
		ok = false
	}
	if f := strings.Fields(first(sec["uptime"])); len(f) >= 1 {
		s.UptimeSeconds = atof(f[0])
	} else {
		ok = false
	}
	for _, line := range sec["meminfo"] {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			s.MemoryTotal = atoi(f[1]) * 1024
		} else if len(f) >= 2 && f[0] == "MemAvailable:" {
			s.MemoryAvail = atoi(f[1]) * 1024
		}
	}
	s.MemoryUsed = s.MemoryTotal - s.MemoryAvail
	s.CPUs = int(atoi(first(sec["cpus"])))
	s.Processes = int(atoi(first(sec["procs"])))
	// df -Pk: filesystem, 1024-blocks, used, available, capacity, mount.
	if f := strings.Fields(first(sec["df"])); len(f) >= 6 {
		s.DiskTotal, s.DiskUsed, s.DiskAvail = atoi(f[1])*1024, atoi(f[2])*1024, atoi(f[3])*1024
	} else {
		ok = false
	}
	s.Partial = !ok || s.MemoryTotal == 0 || s.CPUs == 0
	return s
}

// cpuPercent is the busy share of CPU time between two "cpu …" lines of
// /proc/stat (user nice system idle iowait irq softirq steal …).
func cpuPercent(a, b string) (float64, bool) {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) < 5 || len(fb) != len(fa) || fa[0] != "cpu" {
		return 0, false
	}
	var total, idle float64
	for i := 1; i < len(fa) && i <= 8; i++ { // guest and guest_nice (9, 10) are in user and nice already
		d := atof(fb[i]) - atof(fa[i])
		total += d
		if i == 4 || i == 5 { // idle, iowait
			idle += d
		}
	}
	if total <= 0 {
		return 0, true
	}
	return float64(int((total-idle)/total*1000+0.5)) / 10, true
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}

// Probe runs `true` in the guest and says how long the round trip took.
func (t *Target) Probe(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := t.Clock.Now()
	res, err := t.Exec(ctx, drivers.ExecRequest{Command: "true", Timeout: timeout})
	took := t.Clock.Now().Sub(start)
	switch {
	case err != nil:
		return took, err
	case res.TimedOut:
		return took, fmt.Errorf("no answer within %s", timeout)
	case res.ExitCode != 0:
		return took, fmt.Errorf("`true` exited %d%s", res.ExitCode, coded.Said(coded.Clip(res.Stderr)))
	}
	return took, nil
}

// LastCommand is the newest command the history holds for the sandbox
// (nil when none): what both doors show beside its stats.
func (t *Target) LastCommand() *Event {
	events, err := WorkspaceHistory(t.Resolved.Root).Read(func(ev Event) bool {
		return ev.Sandbox == t.Sandbox && ev.Command != ""
	}, 1)
	if err != nil || len(events) == 0 {
		return nil
	}
	return &events[0]
}

// LeaseLeft is a sandbox's lease end and what is left of it at now (nil
// when it holds no lease), the same for both doors.
func (t *Target) LeaseLeft(now time.Time) *LeaseLeft {
	l, ok := t.Resolved.Config.Leases[t.Sandbox]
	if !ok {
		return nil
	}
	return &LeaseLeft{ExpiresAt: l.ExpiresAt, SecondsLeft: max(0, int64(l.ExpiresAt.Sub(now).Seconds()))}
}

// LeaseLeft is a lease's end and the seconds left until it.
type LeaseLeft struct {
	ExpiresAt   time.Time `json:"expires_at"`
	SecondsLeft int64     `json:"seconds_left"`
}
