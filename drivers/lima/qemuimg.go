package lima

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// An exported Lima snapshot is a standalone qcow2 (backing chain
// flattened) of the snapshot's disk; QEMU's saved memory is not in it.
// Importing writes it into the instance's diffdisk as a new internal
// snapshot, the current disk kept under a temporary snapshot meanwhile.

// importKeep is the snapshot that holds the current disk while an import
// writes the imported one; it is applied back and deleted after.
const importKeep = "sbf-import-current"

// qemuImg runs qemu-img and says what it printed when it fails.
type qemuImg struct{ path string }

func (q qemuImg) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := proc.Command(ctx, q.path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("qemu-img %s: %w%s", strings.Join(args, " "), err, coded.Said(errb.String()))
	}
	return out.Bytes(), nil
}

// findQemuImg is the qemu-img beside the QEMU the user chose
// (QEMU_SYSTEM_<ARCH>), else the one on PATH.
func (d *Driver) findQemuImg() (qemuImg, error) {
	arch := drivers.CanonicalArch(d.opts.HostArch)
	if v := strings.Fields(d.opts.Getenv("QEMU_SYSTEM_" + strings.ToUpper(arch))); len(v) > 0 {
		if p, err := findExecutable(filepath.Join(filepath.Dir(v[0]), "qemu-img"), ""); err == nil {
			return qemuImg{p}, nil
		}
	}
	p, err := findExecutable("qemu-img", d.opts.Getenv("PATH"))
	return qemuImg{p}, err
}

// exportDisk writes the snapshot name of disk into dst as a standalone
// qcow2. -U reads a disk a running QEMU holds: a snapshot's clusters do
// not change while it exists.
func (q qemuImg) exportDisk(ctx context.Context, disk, name, dst string) error {
	if !filepath.IsAbs(disk) || !filepath.IsAbs(dst) {
		return fmt.Errorf("exporting snapshot %s: paths must be absolute (%s, %s)", name, disk, dst)
	}
	_, err := q.run(ctx, "convert", "-U", "-O", "qcow2", "-l", "snapshot.name="+name, disk, dst)
	return err
}

// imageInfo is what qemu-img info says of an image.
type imageInfo struct {
	VirtualSize    int64  `json:"virtual-size"`
	BackingFile    string `json:"backing-filename"`
	BackingFormat  string `json:"backing-filename-format"`
	FormatSpecific struct {
		Data struct {
			DataFile string `json:"data-file"`
		} `json:"data"`
	} `json:"format-specific"`
}

func (q qemuImg) info(ctx context.Context, path string) (imageInfo, error) {
	out, err := q.run(ctx, "info", "-U", "--output=json", "-f", "qcow2", path)
	if err != nil {
		return imageInfo{}, err
	}
	var info imageInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return imageInfo{}, fmt.Errorf("reading qemu-img info of %s: %w", path, err)
	}
	return info, nil
}

// checkImport refuses a file that is not a standalone qcow2 of the disk's
// size: a backing or data file named inside it would make the import
// read another host file into the VM.
func (q qemuImg) checkImport(ctx context.Context, disk, src string) error {
	in, err := q.info(ctx, src)
	if err != nil {
		return coded.New(coded.InvalidArguments, map[string]any{"local_path": src},
			"%s is not a snapshot exported by sbf's Lima driver (a qcow2 file): %v", src, err)
	}
	if in.BackingFile != "" || in.FormatSpecific.Data.DataFile != "" {
		return coded.New(coded.InvalidArguments, map[string]any{"local_path": src},
			"%s names another file (a backing or data file); sbf imports only standalone exports", src)
	}
	cur, err := q.info(ctx, disk)
	if err != nil {
		return err
	}
	if in.VirtualSize != cur.VirtualSize {
		return coded.New(coded.InvalidArguments, map[string]any{"local_path": src, "size_bytes": in.VirtualSize,
			"disk_bytes": cur.VirtualSize}, "%s is a disk of %d bytes and the VM's is %d bytes; import it into a "+
			"sandbox with the same disk size", src, in.VirtualSize, cur.VirtualSize)
	}
	return nil
}

// importDisk makes src the disk's snapshot name, leaving the disk as it
// is. convert -n writes every block of src into the disk's active layer,
// zeroes included, so nothing of the backing file shows through where
// src is empty.
func (q qemuImg) importDisk(ctx context.Context, disk, name, src string) (err error) {
	if !filepath.IsAbs(disk) || !filepath.IsAbs(src) {
		return fmt.Errorf("importing snapshot %s: paths must be absolute (%s, %s)", name, disk, src)
	}
	if err := q.checkImport(ctx, disk, src); err != nil {
		return err
	}
	out, err := q.run(ctx, "snapshot", "-l", "-U", disk)
	if err != nil {
		return err
	}
	for _, s := range parseSnapshotList(string(out)) {
		if s.Name == name || s.Name == importKeep { // qemu-img would take a tag twice
			return fmt.Errorf("the disk has a snapshot %s already", s.Name)
		}
	}
	if _, err := q.run(ctx, "snapshot", "-c", importKeep, disk); err != nil {
		return fmt.Errorf("keeping the current disk before the import: %w", err)
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if _, aerr := q.run(ctx, "snapshot", "-a", importKeep, disk); aerr != nil {
			err = errors.Join(err, fmt.Errorf("putting the current disk back after the import: %w", aerr))
			return // keep importKeep: it is the only copy of the current disk
		}
		if _, derr := q.run(ctx, "snapshot", "-d", importKeep, disk); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	source, _ := json.Marshal(map[string]any{"driver": "qcow2", "backing": nil,
		"file": map[string]any{"driver": "file", "filename": src}})
	if _, err := q.run(ctx, "convert", "-n", "-O", "qcow2", "json:"+string(source), disk); err != nil {
		return fmt.Errorf("writing the export into the disk: %w", err)
	}
	if _, err := q.run(ctx, "snapshot", "-c", name, disk); err != nil {
		return fmt.Errorf("taking the imported snapshot: %w", err)
	}
	return nil
}
