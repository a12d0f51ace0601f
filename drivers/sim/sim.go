// Package sim is a simulated hypervisor for tests, benchmarks and demos,
// selected with [vm] driver = "sim" and never a default. Its world lives
// in a folder, so separate sbf processes share it; operations can be
// slowed (SBF_SIM_LATENCY) or made to fail (SBF_SIM_FAULTS), and each one
// is appended to an operation log that tests read.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/proc"
)

// Name is the driver name in specs.
const Name = "sim"

// Options configure a simulated world.
type Options struct {
	Dir     string      // the world; SBF_SIM_DIR, default a folder of sbf's host state per workspace
	Latency string      // SBF_SIM_LATENCY, e.g. "create=300ms,start=100ms"
	Faults  string      // SBF_SIM_FAULTS, e.g. "create:api=fail,delete:*=fail:2"
	Boot    string      // SBF_SIM_BOOT, e.g. "api=hold": starts leave api booting (boot.go)
	Clock   clock.Clock // timestamps in the log, and the clock latencies pass on
	// Tool, when set (SBF_SIM_TOOL, e.g. "sleep"), waits out each latency in
	// a child process, `TOOL SECONDS`, started as a backend starts its CLI
	// (limactl): an operation fails when it does, as when a signal ends it.
	Tool string
	// Volatile (SBF_SIM_VOLATILE=1) replaces the world's records without
	// syncing them, so a benchmark measures the engine rather than the
	// sim's disk; by default they are as durable as sbf's own files.
	Volatile bool
}

// Driver is one simulated world.
type Driver struct {
	dir     string
	clock   clock.Clock
	latency map[string]time.Duration
	faults  []fault
	tool    string
	boot    []fault // SBF_SIM_BOOT's holds
	// volatile: records are not synced (Options.Volatile)
	volatile bool
}

// record is one instance as stored in the world.
type record struct {
	Name      string         `json:"name"`
	Status    drivers.Status `json:"status"`
	Spec      drivers.Spec   `json:"spec"`
	CreatedAt time.Time      `json:"created_at"`
}

// New opens (creating) a world.
func New(opts Options) (*Driver, error) {
	lat, err := parseLatency(opts.Latency)
	if err != nil {
		return nil, err
	}
	faults, err := parseFaults(opts.Faults)
	if err != nil {
		return nil, err
	}
	boot, err := parseBoot(opts.Boot)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "instances"), 0o755); err != nil {
		return nil, fmt.Errorf("creating sim world %s: %w", opts.Dir, err)
	}
	return &Driver{dir: filepath.Clean(opts.Dir), clock: opts.Clock, latency: lat, faults: faults, boot: boot,
		tool: opts.Tool, volatile: opts.Volatile}, nil
}

// Dir is the world's folder.
func (d *Driver) Dir() string { return d.dir }

// List reports every instance in the world.
func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	if err := d.begin(ctx, "list", ""); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(d.dir, "instances"))
	if err != nil {
		return nil, fmt.Errorf("listing sim world: %w", err)
	}
	// One listing of the labels' folder says which instances have a label
	// to read, rather than two failed opens per instance that has none.
	labelled := map[string]bool{}
	labels, err := os.ReadDir(filepath.Join(d.dir, "labels"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing sim labels: %w", err)
	}
	for _, l := range labels {
		labelled[l.Name()] = true
	}
	out, buf := make([]drivers.Instance, 0, len(entries)), make([]byte, recordBytes)
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			if out, err = d.appendListed(out, name, labelled[name], buf); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, d.end("list", "", nil)
}

// Inspect reports the named instances that exist, as List would.
func (d *Driver) Inspect(ctx context.Context, names []string) ([]drivers.Instance, error) {
	if err := d.begin(ctx, "inspect", ""); err != nil {
		return nil, err
	}
	var out []drivers.Instance
	for _, name := range names {
		var err error
		if out, err = d.appendListed(out, name, true, nil); err != nil {
			return nil, err
		}
	}
	return out, d.end("inspect", "", nil)
}

// appendListed appends what List says of instance name, when it exists;
// its label is read when labelled (a label written after List read the
// labels' folder is the next listing's).
func (d *Driver) appendListed(out []drivers.Instance, name string, labelled bool,
	buf []byte) ([]drivers.Instance, error) {
	r, err := d.readInto(name, buf)
	if errors.Is(err, drivers.ErrNotFound) {
		return out, nil // deleted since the folder was read
	}
	if err != nil {
		return nil, err
	}
	var label *drivers.Label
	if labelled {
		if label, err = drivers.ReadLabelDir(d.labelDir(name)); err != nil {
			return nil, err
		}
	}
	inst := drivers.Instance{Name: r.Name, Driver: Name, Status: r.Status, Reported: r.Spec,
		SSH: "sim://" + r.Name, Label: label, Created: r.CreatedAt}
	if r.Status == drivers.Booting {
		inst.BootStep = bootHeld
	}
	return append(out, inst), nil
}

// Create makes a stopped instance.
func (d *Driver) Create(ctx context.Context, spec drivers.Spec) error {
	if err := d.begin(ctx, "create", spec.Name); err != nil {
		return err
	}
	if _, err := d.read(spec.Name); err == nil {
		return d.end("create", spec.Name, fmt.Errorf("sim instance %s already exists", spec.Name))
	}
	// A label, disk or snapshot left by a delete cut short belongs to no
	// instance; a new one of the same name must not inherit it (a pool
	// reuses names).
	err := d.clearLeftovers(spec.Name)
	if err == nil {
		err = d.write(record{Name: spec.Name, Status: drivers.Stopped, Spec: spec, CreatedAt: d.clock.Now().UTC()})
	}
	return d.end("create", spec.Name, err)
}

// Start runs an instance and waits for its boot (boot.go); an instance
// already booting is only waited for.
func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	name := s.Name
	began := false
	err := d.transition(ctx, "start", name, func(r *record) error {
		if r.Status != drivers.Booting {
			r.Status = drivers.Running
			if d.held(name) {
				r.Status, began = drivers.Booting, true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if began && d.bootRule(name, "timeout") {
		return d.end("start", name, fmt.Errorf("sim instance %s did not finish booting in time (SBF_SIM_BOOT)", name))
	}
	return d.waitBooted(ctx, name)
}

// Stop halts an instance cleanly, once it has booted; stopping a stopped
// one is fine.
func (d *Driver) Stop(ctx context.Context, name string) error {
	if r, err := d.read(name); err == nil && r.Status == drivers.Booting {
		if err := d.waitBooted(ctx, name); err != nil {
			return d.end("stop", name, err)
		}
	}
	return d.transition(ctx, "stop", name, func(r *record) error {
		r.Status = drivers.Stopped
		return nil
	})
}

// ForceStop halts an instance without a clean shutdown; the log names it
// force-stop (and SBF_SIM_LATENCY, SBF_SIM_FAULTS take that name).
func (d *Driver) ForceStop(ctx context.Context, name string) error {
	return d.transition(ctx, "force-stop", name, func(r *record) error {
		r.Status = drivers.Stopped
		return nil
	})
}

// Reconfigure changes a stopped instance's resources.
func (d *Driver) Reconfigure(ctx context.Context, spec drivers.Spec) error {
	return d.transition(ctx, "reconfigure", spec.Name, func(r *record) error {
		if r.Status == drivers.Running || r.Status == drivers.Booting {
			return fmt.Errorf("sim instance %s must be stopped to change it", spec.Name)
		}
		r.Spec = spec
		return nil
	})
}

// Delete removes an instance.
func (d *Driver) Delete(ctx context.Context, name string) error {
	if err := d.begin(ctx, "delete", name); err != nil {
		return err
	}
	// Its label, disk and snapshots go first: a delete cut short leaves an
	// unlabelled instance (deleted again by the next pass), never a stray
	// label.
	err := d.clearLeftovers(name)
	if rerr := os.Remove(d.path(name)); errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("sim instance %s: %w", name, drivers.ErrNotFound))
	} else if rerr != nil {
		err = errors.Join(err, rerr)
	}
	return d.end("delete", name, err)
}

// clearLeftovers removes what an instance keeps besides its record.
func (d *Driver) clearLeftovers(name string) error {
	return errors.Join(os.RemoveAll(d.labelDir(name)), os.RemoveAll(d.guestDir(name)),
		os.RemoveAll(d.snapshotDir(name)), os.RemoveAll(d.templateDir(name)))
}

// labelDir holds an instance's label files (drivers.Labeler).
func (d *Driver) labelDir(name string) string { return filepath.Join(d.dir, "labels", name) }

// MarkSpare records that a pool made the instance and it is ready.
func (d *Driver) MarkSpare(ctx context.Context, name string, s drivers.SpareLabel) error {
	if err := d.begin(ctx, "label", name); err != nil {
		return err
	}
	err := d.labelable(name)
	if err == nil {
		err = drivers.WriteSpareLabel(d.labelDir(name), s)
	}
	return d.end("label", name, err)
}

// Claim records the instance's owner; of concurrent claims one wins.
func (d *Driver) Claim(ctx context.Context, name string, o drivers.Owner) error {
	if err := d.begin(ctx, "claim", name); err != nil {
		return err
	}
	err := d.labelable(name)
	if err == nil {
		err = drivers.ClaimDir(name, d.labelDir(name), o)
	}
	return d.end("claim", name, err)
}

// labelable makes the label folder of an instance that exists.
func (d *Driver) labelable(name string) error {
	if _, err := d.read(name); err != nil {
		return err
	}
	if err := os.MkdirAll(d.labelDir(name), 0o755); err != nil {
		return fmt.Errorf("creating the label folder of sim instance %s: %w", name, err)
	}
	return nil
}

func (d *Driver) transition(ctx context.Context, op, name string, change func(*record) error) error {
	if err := d.begin(ctx, op, name); err != nil {
		return err
	}
	r, err := d.read(name)
	if err == nil {
		err = change(&r)
	}
	if err == nil {
		err = d.write(r)
	}
	return d.end(op, name, err)
}

// begin waits out the operation's latency and applies fault injection.
// A failed operation is logged and changes nothing.
func (d *Driver) begin(ctx context.Context, op, name string) error {
	if lat := d.latencyOf(op, name); lat > 0 && d.tool != "" {
		secs := strconv.FormatFloat(lat.Seconds(), 'f', 3, 64)
		if out, err := proc.Command(ctx, d.tool, secs).CombinedOutput(); err != nil {
			return d.end(op, name, fmt.Errorf("%s %s: %w %s", d.tool, secs, err, out))
		}
	} else if lat > 0 {
		select {
		case <-d.clock.After(lat):
		case <-ctx.Done():
			return d.end(op, name, ctx.Err())
		}
	}
	if err := d.injectFault(ctx, op, name); err != nil {
		return d.end(op, name, err)
	}
	return nil
}

// path is filepath.Join's path without its Clean, which cost List more
// than its reads (d.dir is clean; callers pass valid instance names).
func (d *Driver) path(name string) string {
	const sep = string(filepath.Separator)
	return d.dir + sep + "instances" + sep + name + ".json"
}

func (d *Driver) read(name string) (record, error) { return d.readInto(name, nil) }

// readInto is read with the buffer the file is read into (nil: a new one).
func (d *Driver) readInto(name string, buf []byte) (record, error) {
	var r record
	data, err := readRecord(d.path(name), buf)
	if errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("sim instance %s: %w", name, drivers.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("reading sim instance %s: %w", name, err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("sim instance %s is corrupt: %w", name, err)
	}
	return r, nil
}

// recordBytes is more than an instance's record takes (~400 bytes): the
// buffer a listing reads every record into (what it decodes is copied).
const recordBytes = 8 << 10

func (d *Driver) write(r record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if d.volatile {
		f := ownfile.PathFile(d.path(r.Name))
		return f.Dir.WriteVolatile(f.Name, data, 0o644)
	}
	return atomicfile.WriteFile(d.path(r.Name), data, 0o644)
}

// Version names the backend in list_instances' backend_version, as
// limactl's version names Lima's.
func (d *Driver) Version() string { return "sbf sim (simulated hypervisor; commands run on this host)" }
