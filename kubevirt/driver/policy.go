package driver

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cluster's policy for sbf's VMs: a ConfigMap in the VMs' namespace that the cluster's
// operator writes (deploy/kubevirt/policy.yaml) and whoever runs VMs there may only read.
// Each key is a ceiling on what one Kubernetes user's VMs there (those they hold: HeldBy)
// take at once; absent or "0": no ceiling.
const (
	PolicyConfigMap = "sbf-policy"
	// PolicyMaxPerOwner is the most VMs.
	PolicyMaxPerOwner = "max-vms-per-owner"
	// PolicyMaxCPUsPerOwner is the most vCPUs, all their VMs' together.
	PolicyMaxCPUsPerOwner = "max-cpus-per-owner"
	// PolicyMaxMemoryPerOwner is the most guest memory, all their VMs' together: a Kubernetes
	// quantity ("64Gi").
	PolicyMaxMemoryPerOwner = "max-memory-per-owner"
	// PolicyOwnerExceptions holds an owner's own ceilings, one owner a line: the user's name,
	// then the keys above that differ for them ("system:serviceaccount:sbf-system:sbf-loop
	// max-vms-per-owner=20"); a key a line does not name stays the namespace's.
	PolicyOwnerExceptions = "owner-exceptions"
)

// OwnerCeilings are a namespace's ceilings per owner; a zero field sets none.
type OwnerCeilings struct {
	MaxVMs         int   `json:"max_vms_per_owner"`
	MaxCPUs        int   `json:"max_cpus_per_owner,omitempty"`
	MaxMemoryBytes int64 `json:"max_memory_bytes_per_owner,omitempty"`
}

// Over names the ceilings u passes: "vms", "cpus", "memory".
func (c OwnerCeilings) Over(u OwnerUse) []string {
	var over []string
	if c.MaxVMs > 0 && u.VMs > c.MaxVMs {
		over = append(over, "vms")
	}
	if c.MaxCPUs > 0 && u.CPUs > c.MaxCPUs {
		over = append(over, "cpus")
	}
	if c.MaxMemoryBytes > 0 && u.MemoryBytes > c.MaxMemoryBytes {
		over = append(over, "memory")
	}
	return over
}

// None says whether no ceiling is set.
func (c OwnerCeilings) None() bool { return c == OwnerCeilings{} }

// OwnerPolicy is a namespace's ceilings per owner: the same for everyone but the owners
// its exceptions name.
type OwnerPolicy struct {
	OwnerCeilings
	Exceptions map[string]OwnerCeilings `json:"exceptions,omitempty"`
}

// For is the ceilings owner holds to.
func (p OwnerPolicy) For(owner string) OwnerCeilings {
	if c, ok := p.Exceptions[owner]; ok {
		return c
	}
	return p.OwnerCeilings
}

// ReadOwnerPolicy reads namespace's per-owner ceilings: none when there is no ConfigMap, an
// error when a value is not a whole number (memory: not a quantity), an exception's line
// does not parse, or the ConfigMap cannot be read for another reason than its absence: the
// operator's typo must not lift a ceiling.
func ReadOwnerPolicy(ctx context.Context, c client.Reader, namespace string) (OwnerPolicy, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: PolicyConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return OwnerPolicy{}, nil
	}
	if err != nil {
		return OwnerPolicy{}, fmt.Errorf("reading ConfigMap %s/%s (the VMs' per-owner ceilings): %w", namespace,
			PolicyConfigMap, err)
	}
	where := "ConfigMap " + namespace + "/" + PolicyConfigMap
	var p OwnerPolicy
	if p.OwnerCeilings, err = parseCeilings(cm.Data, OwnerCeilings{}, where); err != nil {
		return OwnerPolicy{}, err
	}
	if raw, ok := cm.Data[PolicyOwnerExceptions]; ok {
		if p.Exceptions, err = parseExceptions(raw, p.OwnerCeilings, where); err != nil {
			return OwnerPolicy{}, err
		}
	}
	return p, nil
}

// parseCeilings sets on base the ceilings data names.
func parseCeilings(data map[string]string, base OwnerCeilings, where string) (OwnerCeilings, error) {
	bad := func(key, raw, what string) error {
		return fmt.Errorf("%s: %s=%q is not %s", where, key, raw, what)
	}
	out := base
	for key, n := range map[string]*int{PolicyMaxPerOwner: &out.MaxVMs, PolicyMaxCPUsPerOwner: &out.MaxCPUs} {
		if raw, ok := data[key]; ok {
			v, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil || v < 0 {
				return OwnerCeilings{}, bad(key, raw, "a whole number")
			}
			*n = v
		}
	}
	if raw, ok := data[PolicyMaxMemoryPerOwner]; ok {
		q, err := resource.ParseQuantity(strings.TrimSpace(raw))
		if err != nil || q.Sign() < 0 {
			return OwnerCeilings{}, bad(PolicyMaxMemoryPerOwner, raw, "a quantity of memory (such as 64Gi)")
		}
		out.MaxMemoryBytes = q.Value()
	}
	return out, nil
}

// parseExceptions reads owner-exceptions: per line an owner, then key=value pairs of the
// ceilings' keys; blank lines and lines starting with # say nothing.
func parseExceptions(raw string, base OwnerCeilings, where string) (map[string]OwnerCeilings, error) {
	out := map[string]OwnerCeilings{}
	lines := bufio.NewScanner(strings.NewReader(raw))
	for n := 1; lines.Scan(); n++ {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		at := fmt.Sprintf("%s %s line %d", where, PolicyOwnerExceptions, n)
		data := map[string]string{}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok || (k != PolicyMaxPerOwner && k != PolicyMaxCPUsPerOwner && k != PolicyMaxMemoryPerOwner) {
				return nil, fmt.Errorf("%s: %q is not %s, %s or %s=VALUE", at, f, PolicyMaxPerOwner,
					PolicyMaxCPUsPerOwner, PolicyMaxMemoryPerOwner)
			}
			data[k] = v
		}
		if _, dup := out[fields[0]]; dup || len(data) == 0 {
			return nil, fmt.Errorf("%s: owner %s named twice or with no ceiling", at, fields[0])
		}
		c, err := parseCeilings(data, base, at)
		if err != nil {
			return nil, err
		}
		out[fields[0]] = c
	}
	return out, lines.Err()
}

// quantity is bytes as Kubernetes writes memory.
func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }

// String is the ceilings set, as the ConfigMap's keys say them.
func (c OwnerCeilings) String() string {
	var parts []string
	if c.MaxVMs > 0 {
		parts = append(parts, fmt.Sprintf("%s=%d", PolicyMaxPerOwner, c.MaxVMs))
	}
	if c.MaxCPUs > 0 {
		parts = append(parts, fmt.Sprintf("%s=%d", PolicyMaxCPUsPerOwner, c.MaxCPUs))
	}
	if c.MaxMemoryBytes > 0 {
		parts = append(parts, PolicyMaxMemoryPerOwner+"="+quantity(c.MaxMemoryBytes))
	}
	return strings.Join(parts, ", ")
}
