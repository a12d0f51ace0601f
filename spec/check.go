package spec

import (
	"fmt"
	"maps"
	"slices"
)

// crossCheck finds problems no single key shows: a sandbox asking for a
// disabled service, lease limits that contradict each other, a lease
// without an end.
func (r *Resolved) crossCheck() Errors {
	var errs Errors
	c := &r.Config
	for _, name := range r.names {
		sb := c.Sandboxes[name]
		seen := map[string]bool{}
		for i, svc := range sb.Services {
			path := fmt.Sprintf("sandboxes.%s.services[%d]", name, i)
			enabled := (svc == "mysql" && c.Infra.MySQL.Enabled) || (svc == "redis" && c.Infra.Redis.Enabled)
			switch {
			case seen[svc]:
				errs = append(errs, r.errorAt(path, fmt.Sprintf("lists %s twice", svc)))
			case !enabled:
				errs = append(errs, r.errorAt(path, fmt.Sprintf("asks for %s, but infra.%s.enabled is false", svc, svc)))
			}
			seen[svc] = true
		}
		errs = append(errs, r.checkImage("sandboxes."+name+".image", sb.Image)...)
		errs = append(errs, r.checkSource(name, sb)...)
		if sb.TTL > 0 && sb.TTL > c.Lease.MaxTTL {
			errs = append(errs, r.errorAt("sandboxes."+name+".ttl",
				fmt.Sprintf("%s is longer than lease.max_ttl (%s)", sb.TTL, c.Lease.MaxTTL)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		errs = append(errs, r.checkImage("pool."+name+".image", c.Pools[name].Image)...)
	}
	errs = append(errs, r.checkImage("vm.image", c.VM.Image)...)
	if c.VM.TTL > c.Lease.MaxTTL {
		errs = append(
			errs,
			r.errorAt("vm.ttl", fmt.Sprintf("%s is longer than lease.max_ttl (%s)", c.VM.TTL, c.Lease.MaxTTL)),
		)
	}
	if c.Lease.DefaultTTL > c.Lease.MaxTTL {
		errs = append(errs, r.errorAt("lease.default_ttl",
			fmt.Sprintf("%s is longer than lease.max_ttl (%s)", c.Lease.DefaultTTL, c.Lease.MaxTTL)))
	}
	if c.Lease.MaxTTL > c.Lease.MaxLifetime {
		errs = append(errs, r.errorAt("lease.max_ttl",
			fmt.Sprintf("%s is longer than lease.max_lifetime (%s)", c.Lease.MaxTTL, c.Lease.MaxLifetime)))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Leases)) {
		if c.Leases[name].ExpiresAt.IsZero() {
			errs = append(errs, r.errorAt("leases."+name, "has no expires_at"))
		}
	}
	return errs
}

func (r *Resolved) checkImage(path string, im Image) Errors {
	var errs Errors
	if im.Kernel != "" && im.Location == "" {
		errs = append(errs, r.errorAt(path+".kernel", "needs "+path+".location (the root disk to boot)"))
	}
	if im.Initrd != "" && im.Kernel == "" {
		errs = append(errs, r.errorAt(path+".initrd", "needs "+path+".kernel"))
	}
	if im.KernelCmdline != "" && im.Kernel == "" {
		errs = append(errs, r.errorAt(path+".kernel_cmdline", "needs "+path+".kernel"))
	}
	return errs
}

// checkSource refuses a sandbox made from itself. Whether the source is
// there is for the plan to say (a clone outlives its source's VM).
func (r *Resolved) checkSource(name string, sb Sandbox) Errors {
	var errs Errors
	if sb.CloneOf == name || sb.CloneOf != "" && !ValidSandboxName(sb.CloneOf) {
		errs = append(errs, r.errorAt("sandboxes."+name+".clone_of",
			fmt.Sprintf("must name another sandbox (got %q)", clip(sb.CloneOf))))
	}
	if from, _, _ := ParseSnapshotRef(sb.FromSnapshot); from == name {
		errs = append(errs, r.errorAt("sandboxes."+name+".from_snapshot",
			"names a snapshot of this sandbox itself; a sandbox is made from another's"))
	}
	return errs
}
