package admission

import (
	"math"
	"path/filepath"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostcap"
	"github.com/sandboxforge/sbf/spec"
)

// FitOnHost refuses a plan that creates a VM the host cannot hold, before
// anything is written, whatever the front door: CPUs, available memory
// (≥ memory + 0.5 GiB) and free disk (≥ disk + 2 GiB). A probe that cannot
// answer skips its check.
func FitOnHost(probe func(dir string) hostcap.Capacity, p *plan.Plan, r *spec.Resolved) error {
	if probe == nil {
		probe = hostcap.Probe
	}
	var c *hostcap.Capacity
	for _, a := range p.Actions {
		if (a.Kind != plan.Create && a.Kind != plan.Replace) || a.Spec == nil {
			continue
		}
		if reg, ok := drivers.Lookup(a.Driver); ok && reg.Remote {
			continue // a cluster's VM takes nothing of this host's
		}
		if c == nil {
			measured := probe(r.Root)
			c = &measured
		}
		if err := hostFit(*c, *a.Spec, r); err != nil {
			err.Details["sandbox"] = a.Sandbox
			return err
		}
	}
	return nil
}

func hostFit(c hostcap.Capacity, vm drivers.Spec, r *spec.Resolved) *coded.Error {
	memNeed, diskNeed := vm.MemoryGiB+0.5, vm.DiskGiB+2
	var failed []string
	if c.CPUs > 0 && vm.CPUs > c.CPUs {
		failed = append(failed, "cpu")
	}
	if c.MemoryAvailableGiB != nil && *c.MemoryAvailableGiB < memNeed {
		failed = append(failed, "memory")
	}
	if c.DiskFreeGiB != nil && *c.DiskFreeGiB < diskNeed {
		failed = append(failed, "disk")
	}
	if len(failed) == 0 {
		return nil
	}
	suggested := map[string]any{"cpus": min(vm.CPUs, max(1, c.CPUs)), "memory_gib": vm.MemoryGiB, "disk_gib": vm.DiskGiB}
	if c.MemoryAvailableGiB != nil {
		suggested["memory_gib"] = round1(math.Max(0.5, *c.MemoryAvailableGiB-0.5))
	}
	if c.DiskFreeGiB != nil {
		suggested["disk_gib"] = round1(math.Max(5, *c.DiskFreeGiB-2))
	}
	return coded.New(coded.HostResources, map[string]any{
		"host_os":          r.Host.OS,
		"workspace_root":   r.Root,
		"workspace_config": filepath.Join(r.Root, spec.FileName),
		"requested_vm":     map[string]any{"cpus": vm.CPUs, "memory_gib": vm.MemoryGiB, "disk_gib": vm.DiskGiB},
		"available_host":   c,
		"required_headroom": map[string]any{
			"minimum_available_memory_gib": memNeed, "minimum_free_disk_gib": diskNeed},
		"failed_checks": failed,
		"suggested_vm":  suggested,
		"next_steps": []string{
			"lower [vm] cpus, memory_gib or disk_gib in " + spec.FileName + " (suggested_vm fits this host)",
			"or pass smaller cpus/memory_gib/disk_gib to create_instance",
			"or free memory and disk on the host, then retry",
		},
	}, "the host cannot hold this VM (%v short): it asks for %d CPUs, %.1f GiB memory, %.1f GiB disk",
		failed, vm.CPUs, vm.MemoryGiB, vm.DiskGiB)
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
