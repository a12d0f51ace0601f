package lima

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/hostcap"
)

// Diagnose says whether Lima can run these VMs here, checking everything
// a first run needs without stopping at the first problem.
func Diagnose(ctx context.Context, o Options, specs []drivers.Spec) drivers.Diagnosis {
	d := newDriver(o)
	diag := drivers.Diagnosis{Driver: Name}
	add := diag.Require
	if !add("host", d.opts.HostOS+"/"+d.opts.HostArch, d.checkHost()) {
		diag.Finish()
		return diag
	}
	add("user", "not root", d.checkUser())
	if add("limactl", "", d.findLimactl(ctx)) {
		diag.Checks[len(diag.Checks)-1].Detail = fmt.Sprintf("limactl %s at %s", d.version, d.limactl)
	}
	mode := d.diagnoseQEMU(ctx, &diag, specs)
	for _, c := range d.diagnoseImages(ctx, specs) {
		diag.Add(c)
	}
	for _, c := range diagnoseCapacity(limaHome(d.opts.Getenv), specs) {
		diag.Add(c)
	}
	diag.Add(diagnoseStateDir(d.opts.StateDir))
	diag.Finish()
	switch {
	case !diag.Usable:
		diag.Summary = "cannot run VMs here yet: see the failed checks"
	case mode != "":
		diag.Summary = "usable via " + mode
	default:
		diag.Summary = "usable"
	}
	return diag
}

// diagnoseQEMU checks QEMU and, on Linux, the accelerator; it returns how
// VMs will run ("hardware virtualization (KVM)", "software emulation").
func (d *Driver) diagnoseQEMU(ctx context.Context, diag *drivers.Diagnosis, specs []drivers.Spec) string {
	host := drivers.CanonicalArch(d.opts.HostArch)
	var native []drivers.Spec
	for _, s := range specs {
		if s.VMType == "qemu" && (s.Arch == "" || drivers.CanonicalArch(s.Arch) == host) {
			native = append(native, s)
		}
	}
	if len(native) == 0 {
		return ""
	}
	if err := d.checkQEMU(native[0]); err != nil {
		diag.Add(drivers.CheckFromError("qemu", err))
		return ""
	}
	qemu, _ := findExecutable("qemu-system-"+host, d.opts.Getenv("PATH"))
	if v := strings.Fields(d.opts.Getenv("QEMU_SYSTEM_" + strings.ToUpper(host))); len(v) > 0 {
		qemu = v[0]
	}
	diag.Add(drivers.Check{Name: "qemu", Status: drivers.CheckOK, Detail: qemuVersion(ctx, qemu) + " at " + qemu})
	if _, err := findExecutable("qemu-img", d.opts.Getenv("PATH")); err != nil {
		diag.Add(
			drivers.Check{
				Name:      "qemu-img",
				Status:    drivers.CheckFail,
				Detail:    "qemu-img not found in PATH (Lima makes each disk with it)",
				NextSteps: []string{"install QEMU's tools (Debian/Ubuntu: apt-get install qemu-utils)"},
			},
		)
	}
	if d.opts.HostOS != "linux" {
		return ""
	}
	a := d.detectAccel(ctx, qemu)
	if a.Usable {
		diag.Add(drivers.Check{Name: "virtualization", Status: drivers.CheckOK, Detail: accelDetail(a)})
		return "hardware virtualization (KVM)"
	}
	steps := []string{}
	if a.Fix != "" {
		steps = append(steps, a.Fix)
	}
	if slices.ContainsFunc(native, func(s drivers.Spec) bool { return s.Emulation != "never" }) {
		diag.Add(drivers.Check{Name: "virtualization", Status: drivers.CheckWarn, NextSteps: steps,
			Detail: "KVM cannot run guests here (" + a.Reason + "): VMs run in software emulation, about 10x slower"})
		return "software emulation"
	}
	diag.Add(
		drivers.Check{
			Name:      "virtualization",
			Status:    drivers.CheckFail,
			NextSteps: append(steps, `or allow software emulation: [vm] emulation = "auto"`),
			Detail:    "KVM cannot run guests here (" + a.Reason + `) and [vm] emulation = "never"`,
		},
	)
	return ""
}

// accelDetail says how KVM was shown to work and what failed first.
func accelDetail(a Accel) string {
	detail := "KVM runs guests with -cpu " + a.CPU
	if a.Kernel != "" {
		detail += " (a Linux kernel, " + a.Kernel + ", reached user space)"
	} else {
		detail += " (a boot sector ran; no Linux kernel was at hand to boot)"
	}
	if len(a.Tried) > 0 {
		detail += "; tried first: " + strings.Join(a.Tried, "; ")
	}
	return detail
}

func qemuVersion(ctx context.Context, qemu string) string {
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := proc.Command(vctx, qemu, "--version").Output()
	if err != nil {
		return "QEMU (version unknown)"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// diagnoseImages checks each distinct image the specs boot: built (sbf
// images), resolvable (templates), downloadable or already downloaded.
func (d *Driver) diagnoseImages(ctx context.Context, specs []drivers.Spec) []drivers.Check {
	var out []drivers.Check
	seen := map[string]bool{}
	for _, s := range specs {
		key := s.Image.Location + "\x00" + s.Template + "\x00" + s.Arch
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, d.diagnoseImage(ctx, s))
	}
	return out
}

func (d *Driver) diagnoseImage(ctx context.Context, s drivers.Spec) drivers.Check {
	name := "image " + s.Image.Location
	if s.Image.Location == "" {
		name = "image " + s.Template
	}
	arch := s.Arch
	if arch == "" {
		arch = drivers.CanonicalArch(d.opts.HostArch)
	}
	if sbfName, ok := images.NameOf(s.Image.Location); ok {
		im, err := d.opts.Image(sbfName, arch)
		if err != nil {
			return drivers.CheckFromError(name, err)
		}
		return drivers.Check{Name: name, Status: drivers.CheckOK, Detail: "built: " + im.Dir}
	}
	var list []image
	var err error
	if s.Image.Location != "" {
		list, err = d.specImages(s)
	} else if d.limactl != "" {
		list, err = d.templates.images(s.Template)
	} else {
		return drivers.Check{Name: name, Status: drivers.CheckFail, Detail: "unknown until limactl is found (its " +
			"templates name the images)"}
	}
	if err != nil {
		return drivers.CheckFromError(name, err)
	}
	for _, im := range list {
		if im.Arch != "" && im.Arch != arch {
			continue
		}
		detail, ok := d.fetchable(ctx, im.Location)
		if ok {
			return drivers.Check{Name: name, Status: drivers.CheckOK, Detail: detail}
		}
		return drivers.Check{Name: name, Status: drivers.CheckFail, Detail: detail,
			NextSteps: d.offlineImageSteps(arch)}
	}
	return drivers.Check{Name: name, Status: drivers.CheckFail, Detail: "lists no image for " + arch}
}

// offlineImageSteps point at the image sbf builds offline, and at its
// build only when it is not built yet.
func (d *Driver) offlineImageSteps(arch string) []string {
	if im, err := d.opts.Image("debian-12", arch); err == nil {
		return []string{`use the image sbf built offline, here in ` + im.Dir + `: [vm.image] location = "sbf:debian-12"`}
	}
	return []string{
		`use the image sbf builds offline: [vm.image] location = "sbf:debian-12"`,
		"build it once as root: sudo sbf image build debian-12",
	}
}

// fetchable says whether Lima can get an image: a local file, one in
// Lima's download cache, or a URL that answers.
func (d *Driver) fetchable(ctx context.Context, location string) (string, bool) {
	if !strings.Contains(location, "://") {
		if _, err := os.Stat(location); err != nil {
			return location + " is not readable: " + err.Error(), false
		}
		return "local file " + location, true
	}
	sum := sha256.Sum256([]byte(location))
	if cache := limaCacheDir(d.opts.HostOS, d.opts.Getenv); cache != "" {
		data := filepath.Join(cache, "download", "by-url-sha256", hex.EncodeToString(sum[:]), "data")
		if _, err := os.Stat(data); err == nil {
			return "in Lima's download cache: " + location, true
		}
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodHead, location, nil)
	if err != nil {
		return err.Error(), false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "cannot be downloaded here (" + err.Error() + ")", false
	}
	resp.Body.Close()
	return "downloadable: " + location, true
}

func limaCacheDir(hostOS string, getenv func(string) string) string {
	if hostOS == "darwin" && getenv("HOME") != "" {
		return filepath.Join(getenv("HOME"), "Library", "Caches", "lima")
	}
	if x := getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "lima")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "lima")
	}
	return ""
}

// diagnoseCapacity compares the largest VM with what the host has free.
func diagnoseCapacity(limaHome string, specs []drivers.Spec) []drivers.Check {
	var mem, disk float64
	for _, s := range specs {
		mem, disk = max(mem, s.MemoryGiB), max(disk, s.DiskGiB)
	}
	if limaHome == "" {
		limaHome = "/"
	}
	probe := limaHome
	for probe != filepath.Dir(probe) {
		if _, err := os.Stat(probe); err == nil {
			break
		}
		probe = filepath.Dir(probe)
	}
	c := hostcap.Probe(probe)
	var out []drivers.Check
	if c.MemoryAvailableGiB != nil {
		ch := drivers.Check{Name: "memory", Status: drivers.CheckOK,
			Detail: fmt.Sprintf("%.1f GiB available, the largest VM asks %.1f GiB", *c.MemoryAvailableGiB, mem)}
		if *c.MemoryAvailableGiB < mem+0.5 {
			ch.Status, ch.NextSteps = drivers.CheckFail, []string{"lower memory_gib, or free memory on the host"}
		}
		out = append(out, ch)
	}
	if c.DiskFreeGiB != nil {
		ch := drivers.Check{Name: "disk", Status: drivers.CheckOK,
			Detail: fmt.Sprintf("%.1f GiB free under %s, the largest VM may grow to %.1f GiB", *c.DiskFreeGiB, probe, disk)}
		switch {
		case *c.DiskFreeGiB < 2:
			ch.Status, ch.NextSteps = drivers.CheckFail, []string{"free disk space under " + probe}
		case *c.DiskFreeGiB < disk+2:
			ch.Status, ch.NextSteps = drivers.CheckWarn, []string{
				"the disk may fill up as VMs grow: free space or lower disk_gib",
			}
		}
		out = append(out, ch)
	}
	return out
}

// diagnoseStateDir proves sbf can write its host-wide state.
func diagnoseStateDir(dir string) drivers.Check {
	if dir == "" {
		return drivers.Check{
			Name:   "state folder",
			Status: drivers.CheckWarn,
			Detail: "not set; the emulation wrappers and caches cannot be kept",
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return drivers.Check{Name: "state folder", Status: drivers.CheckFail, Detail: err.Error(),
			NextSteps: []string{"set SBF_STATE_HOME to a folder this user can write"}}
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return drivers.Check{
			Name:      "state folder",
			Status:    drivers.CheckFail,
			Detail:    dir + " is not writable: " + err.Error(),
			NextSteps: []string{"set SBF_STATE_HOME to a folder this user can write"},
		}
	}
	f.Close()
	os.Remove(f.Name())
	return drivers.Check{Name: "state folder", Status: drivers.CheckOK, Detail: dir + " is writable"}
}
