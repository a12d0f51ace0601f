package lima

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// versionStamp identifies a limactl binary without running it.
type versionStamp struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	Version string    `json:"version"`
}

// limactlVersion asks limactl for its version once per binary: the
// answer is cached by path, size and modification time, because running
// limactl costs ~80 ms on every sbf call otherwise.
func (d *Driver) limactlVersion(ctx context.Context) (string, error) {
	info, statErr := os.Stat(d.limactl)
	cache := filepath.Join(d.opts.StateDir, "lima", "limactl-version.json")
	var stamp versionStamp
	if statErr == nil && d.opts.StateDir != "" {
		if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &stamp) == nil &&
			stamp.Path == d.limactl && stamp.Size == info.Size() && stamp.ModTime.Equal(info.ModTime()) && stamp.Version != "" {
			return stamp.Version, nil
		}
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _, err := d.run(vctx, nil, "--version")
	if err != nil {
		return "", err
	}
	version := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "limactl version"))
	if statErr == nil && d.opts.StateDir != "" && version != "" {
		stamp = versionStamp{Path: d.limactl, Size: info.Size(), ModTime: info.ModTime(), Version: version}
		if b, err := json.Marshal(stamp); err == nil && os.MkdirAll(filepath.Dir(cache), 0o755) == nil {
			_ = atomicfile.WriteFile(cache, append(b, '\n'), 0o644) // only a cache
		}
	}
	return version, nil
}
