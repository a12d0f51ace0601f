package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The global [policy] limits and v1's environment variables are ceilings:
// the smallest of each wins and says where it came from; output and copy
// always have one.
func TestCeilingsComeFromTheGlobalConfigAndTheEnvironment(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, GlobalFile)
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte("[policy]\nmax_instances = 4\nmax_ttl = \"1h\"\nmax_lifetime = \"2d\"\n"+
		"max_output_bytes = 4096\nmax_copy_bytes = 1048576\n"), 0o644)
	g, err := ReadGlobal(home)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(Sources{Global: g, Getenv: env(map[string]string{EnvMaxInstances: "2", EnvMaxTTL: "90"})})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Ceilings
	if c.MaxInstances != (Ceiling[int]{2, "env MAX_INSTANCES"}) ||
		c.MaxTTL != (Ceiling[time.Duration]{time.Hour, "global config " + file + " [policy] max_ttl"}) ||
		c.MaxLifetime.Value != 48*time.Hour || c.MaxOutputBytes.Value != 4096 || c.MaxCopyBytes.Value != 1<<20 {
		t.Errorf("ceilings = %+v", c)
	}
	if got := p.HostPaths("/ws").MaxCopyBytes; got != 1<<20 {
		t.Errorf("host paths carry max_copy_bytes %d", got)
	}
	p, err = Load(Sources{})
	if err != nil || p.Ceilings.MaxOutputBytes != (Ceiling[int64]{DefaultMaxOutputBytes, SourceDefault}) ||
		p.Ceilings.MaxCopyBytes.Value != DefaultMaxCopyBytes || p.Ceilings.MaxInstances.Value != 0 {
		t.Errorf("defaults = %+v %v", p.Ceilings, err)
	}
	for _, bad := range []map[string]string{{EnvMaxInstances: "many"}, {EnvMaxInstances: "0"}, {EnvMaxTTL: "-5"}} {
		if _, err := Load(Sources{Getenv: env(bad)}); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

func TestGlobalLimitsMustBePositive(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "sandboxforge"), 0o755)
	for _, bad := range []string{"max_instances = 0", "max_instances = \"3\"", "max_ttl = 60", "max_ttl = \"-1h\"",
		"max_lifetime = \"soon\"", "max_output_bytes = -1", "max_copy_bytes = 1.5", "max_ttl = \"NaNd\""} {
		os.WriteFile(filepath.Join(home, GlobalFile), []byte("[policy]\n"+bad+"\n"), 0o644)
		if _, err := ReadGlobal(home); err == nil || !strings.Contains(err.Error(), "policy.max_") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
