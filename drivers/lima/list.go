package lima

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/sandboxforge/sbf/drivers"
)

// listedInstance is the part of `limactl list --json` sbf reads.
type listedInstance struct {
	Name          string `json:"name"`
	Status        string `json:"status"`
	Dir           string `json:"dir"`
	VMType        string `json:"vmType"`
	Arch          string `json:"arch"`
	CPUs          int    `json:"cpus"`
	Memory        int64  `json:"memory"` // bytes
	Disk          int64  `json:"disk"`   // bytes
	SSHLocalPort  int    `json:"sshLocalPort"`
	SSHAddress    string `json:"sshAddress"`
	SSHConfigFile string `json:"sshConfigFile"`
}

// List reports sbf's Lima instances as one `limactl list --json` would
// (from their folders when that is sure: readFolders). Lima
// keeps no labels, so sbf's are the ones named as sbf names them, and
// those carrying sbf's label files in their folder (drivers.Labeler).
func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	return d.list(ctx, managedOrLabelled)
}

func managedOrLabelled(name string, label *drivers.Label) bool {
	return drivers.ManagedName(name) || label != nil
}

// Inspect reports the named instances that exist, as List would, as one
// `limactl list --json NAME...` would, which reads only their folders. A name
// without a folder is left out beforehand: limactl fails on one it cannot
// match.
func (d *Driver) Inspect(ctx context.Context, names []string) ([]drivers.Instance, error) {
	var present []string
	for _, name := range names {
		if _, err := os.Stat(d.instanceDir(name)); err == nil {
			present = append(present, name)
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	return d.list(ctx, managedOrLabelled, present...)
}

// list reports the instances limactl lists (all, or the names given) that
// keep passes, labelled.
func (d *Driver) list(
	ctx context.Context,
	keep func(name string, label *drivers.Label) bool,
	names ...string,
) ([]drivers.Instance, error) {
	listed, err := d.listJSON(ctx, keep, names...)
	if err != nil {
		return nil, err
	}
	insts := make([]drivers.Instance, 0, len(listed))
	for _, l := range listed {
		dir := l.Dir
		if dir == "" {
			dir = d.instanceDir(l.Name)
		}
		label, err := drivers.ReadLabelDir(dir)
		if err != nil {
			return nil, err
		}
		if keep(l.Name, label) {
			inst := l.instance()
			inst.Label = label
			observeBoot(&inst, dir)
			insts = append(insts, inst)
		}
	}
	return insts, nil
}

// listJSON is what `limactl list --json [NAME...]` says of the instances
// (all when none is named), read from their folders when that is sure
// (readFolders: then only those keep passes). limactl's own failure is
// returned as it is, for the caller to word.
func (d *Driver) listJSON(
	ctx context.Context,
	keep func(name string, label *drivers.Label) bool,
	names ...string,
) ([]listedInstance, error) {
	if listed, sure := d.readFolders(ctx, keep, names); sure {
		return listed, nil
	}
	out, _, err := d.run(ctx, nil, append([]string{"list", "--json"}, names...)...)
	if err != nil {
		return nil, err
	}
	return parseList(out)
}

// anyInstance keeps every instance listed, sbf's or not.
func anyInstance(string, *drivers.Label) bool { return true }

// parseList accepts the three shapes limactl has printed: NDJSON (one
// object per line), a JSON array, and {"instances": [...]}. A malformed
// NDJSON line is an error naming the line.
func parseList(out []byte) ([]listedInstance, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '[' {
		var list []listedInstance
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("parsing limactl list JSON array: %w", err)
		}
		return list, nil
	}
	var wrapper struct {
		Instances *[]listedInstance `json:"instances"`
	}
	if bytes.Count(trimmed, []byte("\n")) == 0 || bytes.HasPrefix(trimmed, []byte(`{"instances"`)) {
		if err := json.Unmarshal(trimmed, &wrapper); err == nil && wrapper.Instances != nil {
			return *wrapper.Instances, nil
		}
	}
	var list []listedInstance
	sc := bufio.NewScanner(bytes.NewReader(trimmed))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l listedInstance
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("parsing limactl list JSON: line %d: %w", n, err)
		}
		list = append(list, l)
	}
	return list, sc.Err()
}

func (l listedInstance) instance() drivers.Instance {
	status := drivers.Broken
	switch l.Status {
	case "Running":
		status = drivers.Running
	case "Stopped":
		status = drivers.Stopped
	}
	inst := drivers.Instance{Name: l.Name, Driver: Name, Status: status, Reported: drivers.Spec{
		Name: l.Name, CPUs: l.CPUs, MemoryGiB: gib(l.Memory), DiskGiB: gib(l.Disk), Arch: l.Arch, VMType: l.VMType,
	}}
	if l.SSHLocalPort > 0 {
		host := l.SSHAddress
		if host == "" {
			host = "127.0.0.1"
		}
		inst.SSH = host + ":" + strconv.Itoa(l.SSHLocalPort)
	}
	return inst
}

func gib(bytes int64) float64 { return float64(bytes) / (1 << 30) }
