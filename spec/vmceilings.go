package spec

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/internal/policy"
)

// holdVMSizes keeps every VM's size (the [vm] defaults, each sandbox, each
// pool's spares) at or below the operator's ceilings (max_cpus,
// max_memory_gib, max_disk_gib in the global [policy]). As with the lease
// limits, a workspace file's value above a ceiling is lowered to it with a
// warning at its position, so a committed spec stays usable on a smaller
// host; a request's (a tool argument, --set) is refused: a caller asking
// for more than the operator allows is told so, never given less quietly.
func (r *Resolved) holdVMSizes(c policy.Ceilings) Errors {
	hold := func(path string, cpus *int, memory, disk *float64) Errors {
		errs := holdSize(r, path+".cpus", cpus, c.MaxCPUs)
		errs = append(errs, holdSize(r, path+".memory_gib", memory, c.MaxMemoryGiB)...)
		return append(errs, holdSize(r, path+".disk_gib", disk, c.MaxDiskGiB)...)
	}
	vm := &r.Config.VM
	errs := hold("vm", &vm.CPUs, &vm.MemoryGiB, &vm.DiskGiB)
	for _, name := range r.names {
		sb := r.Config.Sandboxes[name]
		errs = append(errs, hold("sandboxes."+name, &sb.CPUs, &sb.MemoryGiB, &sb.DiskGiB)...)
		r.Config.Sandboxes[name] = sb
	}
	for _, name := range slices.Sorted(maps.Keys(r.Config.Pools)) {
		p := r.Config.Pools[name]
		errs = append(errs, hold("pool."+name, &p.CPUs, &p.MemoryGiB, &p.DiskGiB)...)
		r.Config.Pools[name] = p
	}
	r.Ceilings = append(r.Ceilings, sizeRow("max_cpus", c.MaxCPUs), sizeRow("max_memory_gib", c.MaxMemoryGiB),
		sizeRow("max_disk_gib", c.MaxDiskGiB))
	return errs
}

// holdSize lowers *v to the ceiling, or refuses it when a request set it.
// A value no layer set at path is inherited ([vm]'s, or a default) and
// lowered without a word of its own: where it came from was told already.
func holdSize[T int | float64](r *Resolved, path string, v *T, c policy.Ceiling[T]) Errors {
	if c.Value <= 0 || *v <= c.Value {
		return nil
	}
	why := fmt.Sprintf("%v is above the operator's ceiling %v (%s)", *v, c.Value, c.Source)
	l := r.origin(path)
	if l != nil && l.source == SourceRequest {
		return Errors{l.errorAt(path, false, why+"; ask for "+fmt.Sprint(c.Value)+" or less")}
	}
	if l != nil && !l.global {
		r.Warnings = append(r.Warnings, l.errorAt(path, false, fmt.Sprintf("%s: %v applies", why, c.Value)))
	}
	*v = c.Value
	return nil
}

// sizeRow is a VM size ceiling as validate --show and the policy resource
// report it: the bound, or none.
func sizeRow[T int | float64](key string, c policy.Ceiling[T]) Ceiling {
	if c.Value <= 0 {
		return Ceiling{Key: key, Source: SourceNoCeiling, ValueFrom: SourceDefaults}
	}
	return Ceiling{Key: key, Ceiling: c.Value, Source: c.Source, Value: c.Value, ValueFrom: FromCeiling}
}
