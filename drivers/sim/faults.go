package sim

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// fault is one SBF_SIM_FAULTS rule: OP:TARGET=fail[:N]. TARGET is an
// instance name, a sandbox name (the end of an instance name) or *.
// Without N the operation always fails; with N it fails N times, counted
// in the world so separate processes share the count.
type fault struct {
	rule   string
	op     string
	target string
	times  int // 0: always
}

var ops = map[string]bool{
	"list":        true,
	"inspect":     true,
	"create":      true,
	"start":       true,
	"stop":        true,
	"force-stop":  true,
	"delete":      true,
	"reconfigure": true,
	"label":       true,
	"claim":       true,
	// snapshots and clones (snapshots.go)
	"snapshot":        true,
	"restore":         true,
	"delete-snapshot": true,
	"list-snapshots":  true,
	"clone":           true,
	// forks (fork.go)
	"fork-save":  true,
	"fork-child": true,
	// memory templates (fork.go)
	"template-save": true,
	"template-open": true,
}

func parseFaults(s string) ([]fault, error) {
	var out []fault
	for _, rule := range splitList(s) {
		lhs, rhs, ok := strings.Cut(rule, "=")
		op, target, ok2 := strings.Cut(lhs, ":")
		if !ok || !ok2 || !ops[op] || target == "" {
			return nil, fmt.Errorf("SBF_SIM_FAULTS rule %q: want OP:TARGET=fail[:N] with OP one of %s", rule,
				strings.Join(slices.Sorted(maps.Keys(ops)), ", "))
		}
		f := fault{rule: rule, op: op, target: target}
		switch {
		case rhs == "fail":
		case strings.HasPrefix(rhs, "fail:"):
			n, err := strconv.Atoi(strings.TrimPrefix(rhs, "fail:"))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("SBF_SIM_FAULTS rule %q: fail count must be a positive integer", rule)
			}
			f.times = n
		default:
			return nil, fmt.Errorf("SBF_SIM_FAULTS rule %q: want fail or fail:N after =", rule)
		}
		out = append(out, f)
	}
	return out, nil
}

// parseLatency reads OP=DURATION items, or OP:TARGET=DURATION for one
// instance (matched as faults are); an instance's own item wins.
func parseLatency(s string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, item := range splitList(s) {
		key, d, ok := strings.Cut(item, "=")
		op, _, _ := strings.Cut(key, ":")
		dur, err := time.ParseDuration(d)
		if !ok || !ops[op] || err != nil || dur < 0 || strings.HasSuffix(key, ":") {
			return nil, fmt.Errorf("SBF_SIM_LATENCY item %q: want OP=DURATION (create=300ms) or "+
				"OP:TARGET=DURATION", item)
		}
		out[key] = dur
	}
	return out, nil
}

// latencyOf is how long op takes for instance name.
func (d *Driver) latencyOf(op, name string) time.Duration {
	for key, dur := range d.latency {
		if o, target, ok := strings.Cut(key, ":"); ok && (fault{op: o, target: target}).matches(op, name) {
			return dur
		}
	}
	return d.latency[op]
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func (f fault) matches(op, name string) bool {
	return f.op == op && (f.target == "*" || f.target == name || strings.HasSuffix(name, "-"+f.target))
}

// injectFault fails the operation when a rule says so.
func (d *Driver) injectFault(ctx context.Context, op, name string) error {
	for _, f := range d.faults {
		if !f.matches(op, name) {
			continue
		}
		if f.times == 0 {
			return fmt.Errorf("sim: injected %s failure for %s", op, name)
		}
		fire, err := d.consume(ctx, f)
		if err != nil {
			return err
		}
		if fire {
			return fmt.Errorf("sim: injected %s failure for %s (rule %s)", op, name, f.rule)
		}
	}
	return nil
}

// consume takes one use of a counted rule; false once it is used up.
func (d *Driver) consume(ctx context.Context, f fault) (bool, error) {
	lock, err := flock.Acquire(
		ctx,
		ownfile.At(d.dir).File("faults.lock"),
		flock.Holder{Command: "sim", PID: os.Getpid()},
		time.Minute,
	)
	if err != nil {
		return false, err
	}
	defer lock.Release()
	sum := sha1.Sum([]byte(f.rule))
	path := filepath.Join(d.dir, "fault-"+hex.EncodeToString(sum[:8])+".count")
	used := 0
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		used, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if used >= f.times {
		return false, nil
	}
	return true, os.WriteFile(path, []byte(strconv.Itoa(used+1)), 0o644)
}
