package lima

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// Create writes the instance's lima.yaml and creates it (stopped).
func (d *Driver) Create(ctx context.Context, s drivers.Spec) error {
	images, err := d.createImages(s)
	if err != nil {
		return err
	}
	return d.createWith(ctx, s, images)
}

// createImages are the images an instance of s boots: the spec's, else its template's.
func (d *Driver) createImages(s drivers.Spec) ([]image, error) {
	if err := d.checkQEMU(s); err != nil {
		return nil, err
	}
	images, err := d.specImages(s)
	if err != nil || images != nil {
		return images, err
	}
	return d.templates.images(s.Template)
}

func (d *Driver) createWith(ctx context.Context, s drivers.Spec, images []image) error {
	y, err := generate(s, images)
	if err != nil {
		return err
	}
	_, _, err = d.run(ctx, strings.NewReader(string(y)), "create", "--name", s.Name, "-")
	return guidance(err)
}

// createOver makes an instance whose disk and boot files the caller puts
// in place (a fork's child links its source's). `limactl create` prepares
// an instance's disks as it makes it, copying its image (8 s for four
// children of a 1.2 GB image here, all of it thrown away), so the images it
// is given are empty files of the same shape: nothing is copied.
func (d *Driver) createOver(ctx context.Context, s drivers.Spec) error {
	images, err := d.createImages(s)
	if err != nil {
		return err
	}
	empty := filepath.Join(d.opts.StateDir, "lima", "fork-placeholder")
	if err := os.MkdirAll(filepath.Dir(empty), 0o700); err != nil {
		return fmt.Errorf("making %s: %w", empty, err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		return fmt.Errorf("making %s: %w", empty, err)
	}
	placeholders := make([]image, len(images))
	for i, im := range images {
		placeholders[i] = image{Location: empty, Arch: im.Arch}
		if im.Kernel != nil {
			placeholders[i].Kernel = &file{Location: empty, Cmdline: im.Kernel.Cmdline}
		}
		if im.Initrd != nil {
			placeholders[i].Initrd = &file{Location: empty}
		}
	}
	return d.createWith(ctx, s, placeholders)
}

// Stop halts an instance, forcibly when a clean stop fails.
func (d *Driver) Stop(ctx context.Context, name string) error {
	d.dropConn(name)
	_, _, err := d.run(ctx, nil, "stop", name)
	if err != nil && !isNotFound(err, name) {
		d.opts.Debug("lima: clean stop of %s failed (%v); forcing", name, err)
		_, _, err = d.run(ctx, nil, "stop", "--force", name)
	}
	return notFound(err, name)
}

// ForceStop halts an instance without a clean shutdown (an expiry's stop).
func (d *Driver) ForceStop(ctx context.Context, name string) error {
	d.dropConn(name)
	_, _, err := d.run(ctx, nil, "stop", "--force", name)
	return notFound(err, name)
}

// Delete removes an instance and its disks.
func (d *Driver) Delete(ctx context.Context, name string) error {
	d.dropConn(name)
	_, _, err := d.run(ctx, nil, "delete", "--force", name)
	return notFound(err, name)
}

// Reconfigure applies restart-class changes to a stopped instance with
// `limactl edit --set`: resources, mounts and port forwards. A larger disk
// is grown by Lima on the next start.
func (d *Driver) Reconfigure(ctx context.Context, s drivers.Spec) error {
	mounts, err := parseMounts(s.Mounts)
	if err != nil {
		return err
	}
	ports, err := parsePorts(s.Ports)
	if err != nil {
		return err
	}
	ports = append(ports, portForward{GuestIP: "0.0.0.0", Proto: "any", Ignore: true})
	mountType := "null"
	if len(mounts) == 0 {
		mountType = `"reverse-sshfs"`
	}
	expr := fmt.Sprintf(`.cpus = %d | .memory = %q | .disk = %q | .mountType = %s | .mounts = %s | .portForwards = %s`,
		s.CPUs, size(s.MemoryGiB), size(s.DiskGiB), mountType, jsonOf(mounts), jsonOf(ports))
	_, _, err = d.run(ctx, nil, "edit", s.Name, "--set", expr)
	return notFound(err, s.Name)
}

// instanceDir is the folder Lima keeps an instance in.
func (d *Driver) instanceDir(name string) string {
	return filepath.Join(limaHome(d.opts.Getenv), name)
}

// MarkSpare records in the instance's folder that a pool made it and it
// is ready (drivers.Labeler); `limactl delete` removes it with the folder.
func (d *Driver) MarkSpare(_ context.Context, name string, s drivers.SpareLabel) error {
	dir := d.instanceDir(name)
	if _, err := os.Stat(filepath.Join(dir, "lima.yaml")); err != nil {
		return fmt.Errorf("labelling %s as a spare: %w", name, drivers.ErrNotFound)
	}
	if err := drivers.WriteSpareLabel(dir, s); err != nil {
		return fmt.Errorf("labelling %s as a spare: %w", name, err)
	}
	return nil
}

// Claim records the instance's owner in its folder, atomically.
func (d *Driver) Claim(_ context.Context, name string, o drivers.Owner) error {
	dir := d.instanceDir(name)
	if _, err := os.Stat(filepath.Join(dir, "lima.yaml")); err != nil {
		return fmt.Errorf("claiming %s: %w", name, drivers.ErrNotFound)
	}
	return drivers.ClaimDir(name, dir, o)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkQEMU makes a missing QEMU an availability problem with guidance,
// before limactl fails with a less helpful message.
func (d *Driver) checkQEMU(s drivers.Spec) error {
	if s.VMType != "qemu" {
		if s.VMType == "vz" && d.opts.HostOS != "darwin" {
			return unavailable("unsupported_vm_type_for_host", "vm_type vz needs macOS (Apple Virtualization)",
				`set [vm] vm_type = "qemu" on this host`)
		}
		return nil
	}
	arch := s.Arch
	if arch == "" {
		arch = drivers.CanonicalArch(d.opts.HostArch)
	}
	env := "QEMU_SYSTEM_" + strings.ToUpper(arch)
	path := d.opts.Getenv("PATH")
	if v := strings.Fields(d.opts.Getenv(env)); len(v) > 0 {
		if _, err := findExecutable(v[0], path); err == nil {
			return nil
		}
	}
	if _, err := findExecutable("qemu-system-"+arch, path); err == nil {
		return nil
	}
	return unavailable("host_vm_dependency_missing", "qemu-system-"+arch+" not found in PATH",
		"install QEMU (Debian/Ubuntu: apt-get install qemu-system-x86 qemu-utils; macOS: brew install qemu)",
		"or point "+env+" at a QEMU binary")
}

// guidance adds what to do to limactl failures whose cause is known.
func guidance(err error) error {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return err
	}
	msg := strings.ToLower(ce.Stderr)
	switch {
	case strings.Contains(msg, "/dev/kvm") && strings.Contains(msg, "permission denied"):
		return fmt.Errorf("%w\nhint: the user running sbf cannot open /dev/kvm: add it to the kvm group, "+
			"or use software emulation (see docs/lima.md)", err)
	case strings.Contains(msg, "qemu") && strings.Contains(msg, "not found"):
		return fmt.Errorf("%w\nhint: install QEMU (qemu-system-x86 and qemu-utils on Debian)", err)
	}
	return err
}

// isNotFound recognises limactl's answer for an unknown instance: a
// "does not exist" message, or a missing file inside its directory.
func isNotFound(err error, name string) bool {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return false
	}
	return strings.Contains(ce.Stderr, "does not exist") ||
		strings.Contains(ce.Stderr, "no such file or directory") && strings.Contains(ce.Stderr, name)
}

func notFound(err error, name string) error {
	if isNotFound(err, name) {
		return fmt.Errorf("%w: %w", drivers.ErrNotFound, err)
	}
	return err
}
