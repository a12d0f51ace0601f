package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// A Ceiling is the most the operator allows of one limit, and where that
// came from. A zero Value is no ceiling.
type Ceiling[T int | int64 | float64 | time.Duration] struct {
	Value  T
	Source string
}

// lower keeps the smaller of the ceiling and v (a zero v is none).
func (c *Ceiling[T]) lower(v T, source string) {
	if v > 0 && (c.Value == 0 || v < c.Value) {
		c.Value, c.Source = v, source
	}
}

// Ceilings bound what a workspace, its local file, the managed overrides,
// a request override or a tool argument may ask for: each may lower a
// limit, none may raise it past the operator's ceiling. The lease ones
// have no ceiling unless the operator set one (the workspace decides);
// the output and copy ones always have one, the server's default.
type Ceilings struct {
	MaxInstances   Ceiling[int]           // host-wide instance cap
	MaxTTL         Ceiling[time.Duration] // longest single lease or extension
	MaxLifetime    Ceiling[time.Duration] // longest a lease may reach through extensions
	MaxOutputBytes Ceiling[int64]         // bytes of each output stream the server keeps
	MaxCopyBytes   Ceiling[int64]         // bytes one copy back from a guest may write on the host
	// The largest VM a workspace or a caller may ask for; none unless the
	// operator set them.
	MaxCPUs      Ceiling[int]
	MaxMemoryGiB Ceiling[float64]
	MaxDiskGiB   Ceiling[float64]
}

// The server's own ceilings, which the operator may change.
const (
	// DefaultMaxOutputBytes bounds each output stream of a command the
	// server holds, whatever a caller asks and whatever the guest prints.
	DefaultMaxOutputBytes int64 = 8 << 20
	// DefaultMaxCopyBytes bounds what one copy back from a guest writes
	// (hostpath's reasons).
	DefaultMaxCopyBytes = hostpath.DefaultMaxCopyBytes
	// SourceDefault names a ceiling nobody set.
	SourceDefault = "default"
)

// V1 environment variables that set lease limits (SandboxForge v1's
// server settings): the operator's, so ceilings.
const (
	EnvMaxInstances = "MAX_INSTANCES"
	EnvMaxTTL       = "MAX_TTL_MINUTES"
)

// Defaulted fills the ceilings every server has (output, copy) with the
// defaults where the operator set none.
func (c Ceilings) Defaulted() Ceilings {
	if c.MaxOutputBytes.Value <= 0 {
		c.MaxOutputBytes = Ceiling[int64]{DefaultMaxOutputBytes, SourceDefault}
	}
	if c.MaxCopyBytes.Value <= 0 {
		c.MaxCopyBytes = Ceiling[int64]{DefaultMaxCopyBytes, SourceDefault}
	}
	return c
}

// ceilings combines the global config's [policy] limits and v1's
// environment variables: the smallest of each wins.
func ceilings(g *Global, getenv func(string) string) (Ceilings, error) {
	var c Ceilings
	if g != nil {
		at := func(key string) string { return "global config " + g.Path + " [policy] " + key }
		c.MaxInstances.lower(g.MaxInstances, at("max_instances"))
		c.MaxTTL.lower(g.MaxTTL, at("max_ttl"))
		c.MaxLifetime.lower(g.MaxLifetime, at("max_lifetime"))
		c.MaxOutputBytes.lower(g.MaxOutputBytes, at("max_output_bytes"))
		c.MaxCopyBytes.lower(g.MaxCopyBytes, at("max_copy_bytes"))
		c.MaxCPUs.lower(g.MaxCPUs, at("max_cpus"))
		c.MaxMemoryGiB.lower(g.MaxMemoryGiB, at("max_memory_gib"))
		c.MaxDiskGiB.lower(g.MaxDiskGiB, at("max_disk_gib"))
	}
	var errs []string
	if v := strings.TrimSpace(getenv(EnvMaxInstances)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Sprintf("%s=%q: want an integer ≥ 1", EnvMaxInstances, v))
		}
		c.MaxInstances.lower(n, "env "+EnvMaxInstances)
	}
	if v := strings.TrimSpace(getenv(EnvMaxTTL)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > math.MaxInt64/int(time.Minute) {
			errs = append(errs, fmt.Sprintf("%s=%q: want a number of minutes ≥ 1", EnvMaxTTL, v))
		} else {
			c.MaxTTL.lower(time.Duration(n)*time.Minute, "env "+EnvMaxTTL)
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid environment: %s", strings.Join(errs, "; "))
	}
	return c.Defaulted(), nil
}

// globalLimit reads one limit key of the global [policy] table.
func globalLimit(g *Global, key string, val any) error {
	var err error
	switch key {
	case "max_instances":
		g.MaxInstances, err = positiveInt[int](val)
	case "max_output_bytes":
		g.MaxOutputBytes, err = positiveInt[int64](val)
	case "max_copy_bytes":
		g.MaxCopyBytes, err = positiveInt[int64](val)
	case "max_cpus":
		g.MaxCPUs, err = positiveInt[int](val)
	case "max_memory_gib":
		g.MaxMemoryGiB, err = positiveSize(val)
	case "max_disk_gib":
		g.MaxDiskGiB, err = positiveSize(val)
	case "max_ttl":
		g.MaxTTL, err = positiveDuration(val)
	case "max_lifetime":
		g.MaxLifetime, err = positiveDuration(val)
	}
	if err != nil {
		return fmt.Errorf("%s: policy.%s %w", g.Path, key, err)
	}
	return nil
}

var limitKeys = []string{"max_copy_bytes", "max_cpus", "max_disk_gib", "max_instances", "max_lifetime",
	"max_memory_gib", "max_output_bytes", "max_ttl"}

// positiveSize reads a size in GiB: a positive number, whole or not.
func positiveSize(val any) (float64, error) {
	switch n := val.(type) {
	case int64:
		if n > 0 {
			return float64(n), nil
		}
	case float64:
		if n > 0 && !math.IsInf(n, 1) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("must be a positive number of GiB")
}

func positiveInt[T int | int64](val any) (T, error) {
	n, ok := val.(int64)
	if !ok || n < 1 || int64(T(n)) != n {
		return 0, fmt.Errorf("must be a positive integer")
	}
	return T(n), nil
}

// positiveDuration reads "30m", "12h", "7d" or a Go duration, as the
// spec's durations are written.
func positiveDuration(val any) (time.Duration, error) {
	s, ok := val.(string)
	if !ok {
		return 0, fmt.Errorf("must be a duration such as \"1h\" or \"7d\"")
	}
	s = strings.TrimSpace(s)
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		n, err = strconv.ParseFloat(days, 64)
		if err == nil && (math.IsNaN(n) || n*24 > float64(math.MaxInt64/int64(time.Hour))) {
			err = fmt.Errorf("out of range")
		}
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("must be a positive duration such as \"1h\" or \"7d\" (got %q)", coded.Clip(s))
	}
	return d, nil
}
