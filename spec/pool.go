package spec

import (
	"reflect"
	"time"
)

// Pool is a [pool.NAME] table: keep Size booted, idle VMs of one shape
// (and with MemoryTemplate one saved and stopped, which creates start from).
// It inherits [vm]'s shape keys and may override any of them; a sandbox
// whose driver and shape are the same adopts one of its spares instead
// of booting a VM (mounts and ports are applied after adoption).
type Pool struct {
	// Shape's keys default to [vm]'s (poolFrom); the schema says so.
	Shape          `toml:",inline" defaults:"vm"`
	Size           int      `toml:"size" json:"size" check:"nonnegative" doc:"How many ready spares to keep (0 keeps none)."`
	MaxIdle        Duration `toml:"max_idle" json:"max_idle" check:"positive" doc:"A spare nobody adopted for this long is deleted and replaced."`
	Runtime        bool     `toml:"runtime" json:"runtime" doc:"Make the container runtime ready in each spare before it counts as ready (installed when missing and [docker] install_if_missing), so an adopter's runtime step has nothing to do. Ignored by the sim."`
	MemoryTemplate bool     `toml:"memory_template" json:"memory_template" doc:"Also keep one memory template of this shape: a spare booted once, its memory saved and the VM stopped; a create that finds no ready spare starts from it without a boot (sandboxes without mounts; Lima QEMU and the sim). It is replaced after max_idle and when the shape changes."`
}

// Pool defaults that [vm] does not give.
const (
	DefaultPoolSize    = 1
	DefaultPoolMaxIdle = 24 * time.Hour
)

// poolFrom is a pool's starting point: [vm]'s shape and the pool defaults,
// before its own table is laid over it.
func poolFrom(vm VM) Pool {
	return Pool{Shape: vm.Shape, Size: DefaultPoolSize, MaxIdle: Duration(DefaultPoolMaxIdle), Runtime: true}
}

// resolvePools builds each pool from the final [vm] plus the keys its own
// table sets, as sandboxes are built.
func resolvePools(merged map[string]any, vm VM) map[string]Pool {
	tables, _ := merged["pool"].(map[string]any)
	out := make(map[string]Pool, len(tables))
	for name, t := range tables {
		p := poolFrom(vm)
		assign(t.(map[string]any), reflect.ValueOf(&p).Elem())
		out[name] = p
	}
	return out
}
