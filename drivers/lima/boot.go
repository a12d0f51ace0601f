package lima

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Files of an instance's folder that sbf reads (Lima v1.2.1, its
// pkg/store/filenames): the host agent's events, one JSON object a line,
// rewritten at every start; its log; the version file `limactl create`
// writes once; the host agent's socket and the ssh.config it writes
// (liveTarget).
const (
	eventsFile    = "ha.stdout.log"
	agentLog      = "ha.stderr.log"
	versionFile   = "lima-version"
	hostAgentSock = "ha.sock"
	sshConfigFile = "ssh.config"
)

// vmPIDFiles are the VM processes' pid files, one per vmType sbf runs
// (Lima's filenames.PIDFile).
var vmPIDFiles = []string{"qemu.pid", "vz.pid"}

// maxBootRead bounds what is read of the host agent's files per look.
const maxBootRead = 1 << 20

// bootPoll is how often a wait for a boot that `limactl start` does not
// wait for (one a start cut short began) looks again; Lima itself looks
// every 10 s.
const bootPoll = 2 * time.Second

// observeBoot completes what limactl lists of an instance with what its
// folder says: when it was made and, for a running one, whether its boot
// is over. limactl lists an instance as Running from the moment its host
// agent runs; only the agent's event with "running" set says that the
// boot is done (SSH, cloud-init's boot scripts, the guest agent), which is
// what `limactl start` waits for.
func observeBoot(inst *drivers.Instance, dir string) {
	if info, err := os.Stat(filepath.Join(dir, versionFile)); err == nil {
		inst.Created = info.ModTime().UTC()
	}
	if inst.Status != drivers.Running {
		return
	}
	if booting, step := bootState(dir); booting {
		inst.Status, inst.BootStep = drivers.Booting, step
	}
}

// bootState reads the host agent's events: booting until one says the
// instance runs (READY or DEGRADED alike: `limactl start` is over then),
// or until a fork's child was restored (forkRestored).
// Without an events file the instance was not started the way sbf knows,
// and limactl's word stands.
func bootState(dir string) (booting bool, step string) {
	if _, err := os.Stat(filepath.Join(dir, forkRestored)); err == nil {
		return false, "" // restored from saved memory: its guest is up whatever Lima still checks
	}
	f, err := os.Open(filepath.Join(dir, eventsFile))
	if err != nil {
		return false, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxBootRead))
	sc.Buffer(make([]byte, 64<<10), maxBootRead)
	for sc.Scan() {
		var ev struct {
			Status struct {
				Running bool `json:"running"`
			} `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Status.Running {
			return false, ""
		}
	}
	return true, lastWaiting(filepath.Join(dir, agentLog))
}

// lastWaiting is the last "Waiting for …" the host agent logged: what the
// boot waits for now ("" when it logged none yet).
func lastWaiting(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > maxBootRead {
		f.Seek(info.Size()-maxBootRead, io.SeekStart)
	}
	last := ""
	sc := bufio.NewScanner(io.LimitReader(f, maxBootRead))
	sc.Buffer(make([]byte, 64<<10), maxBootRead)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Msg, "Waiting for") {
			last = line.Msg
		}
	}
	return last
}

// listOne lists one instance, its boot observed.
func (d *Driver) listOne(ctx context.Context, name string) (listedInstance, drivers.Instance, error) {
	listed, err := d.listJSON(ctx, anyInstance, name)
	switch {
	case err != nil:
		return listedInstance{}, drivers.Instance{}, notFound(err, name)
	case len(listed) == 0:
		return listedInstance{}, drivers.Instance{}, fmt.Errorf("listing %s: limactl lists no such instance: %w",
			name, drivers.ErrNotFound)
	case len(listed) > 1:
		return listedInstance{}, drivers.Instance{}, fmt.Errorf("listing %s: limactl lists %d instances by that name",
			name, len(listed))
	}
	l := listed[0]
	inst := l.instance()
	dir := l.Dir
	if dir == "" {
		dir = d.instanceDir(name)
	}
	observeBoot(&inst, dir)
	return l, inst, nil
}

// waitBooted waits until a running instance's boot is over: `limactl
// start` returns at once for an instance that already runs, even one a
// start cut short left booting. What the boot waits for is reported as it
// changes.
func (d *Driver) waitBooted(ctx context.Context, name string) error {
	if booting, _ := bootState(d.instanceDir(name)); !booting {
		return nil // what a start that waited itself finds: no limactl call
	}
	deadline := d.opts.Clock.Now().Add(d.opts.StartTimeout)
	last := "\x00"
	for {
		_, inst, err := d.listOne(ctx, name)
		if err != nil {
			return err
		}
		switch inst.Status {
		case drivers.Running:
			return nil
		case drivers.Booting:
		default:
			return d.bootFailure(fmt.Errorf("%s stopped while booting (limactl lists it %s)", name, inst.Status),
				"", name)
		}
		if inst.BootStep != last {
			last = inst.BootStep
			step := inst.BootStep
			if step == "" {
				step = "its host agent's first steps"
			}
			drivers.Progressf(ctx, "lima: %s is still booting: %s", name, step)
		}
		if !d.opts.Clock.Now().Before(deadline) {
			return d.bootFailure(fmt.Errorf("%s did not finish booting within %s", name, d.opts.StartTimeout), "", name)
		}
		if err := clock.Sleep(ctx, d.opts.Clock, bootPoll); err != nil {
			return err
		}
	}
}
