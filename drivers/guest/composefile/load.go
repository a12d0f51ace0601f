// Package composefile loads a sandbox's compose files on the host with
// compose-go, validating them against the compose specification before
// any VM is touched. A guest may have written them, so every path they
// name is held to the workspace first (check.go), and sbf loads them only
// in a child that confined itself to the workspace before reading (Child,
// run by drivers/guest/composerun). It is linked only into the sbf-server
// binary, whose compose-load child both sbf and sbf-server run, so sbf's
// own start stays free of compose-go's schemas.
package composefile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sandboxforge/sbf/drivers/guest"

	"github.com/compose-spec/compose-go/v2/types"
)

// LoadProject reads and validates a sandbox's compose files on the host,
// before any VM is touched. Every path they name is first held to the
// workspace (check.go): a path outside is a positioned problem, all of
// them at once, and compose-go does not run. sbf calls it in a child that
// has confined itself to the workspace first (Child).
func LoadProject(ctx context.Context, o guest.LoadOptions) (*guest.Project, error) {
	l, err := prepare(o)
	if err != nil {
		return nil, err
	}
	defer l.check.Close()
	p, err := l.opts.LoadProject(ctx)
	if err != nil {
		return nil, l.loaderError(err)
	}
	if o.Network != "" {
		joinNetwork(p, o.Network)
	}
	relativize(p, l.dir)
	return bundle(p, l.check.rootDir, l.dir)
}

// relativize turns the host paths the loader resolved back into paths
// relative to the project directory, which is where the bundle lands in
// the guest: build contexts, env files, bind mounts, secrets and configs.
func relativize(p *types.Project, dir string) {
	for name, svc := range p.Services {
		if svc.Build != nil {
			svc.Build.Context = relDot(dir, svc.Build.Context)
		}
		for i := range svc.EnvFiles {
			svc.EnvFiles[i].Path = relDot(dir, svc.EnvFiles[i].Path)
		}
		for i, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				svc.Volumes[i].Source = relDot(dir, v.Source)
			}
		}
		p.Services[name] = svc
	}
	for name, sec := range p.Secrets {
		sec.File = relDot(dir, sec.File)
		p.Secrets[name] = sec
	}
	for name, cfg := range p.Configs {
		cfg.File = relDot(dir, cfg.File)
		p.Configs[name] = cfg
	}
}

// relDot makes a path under dir relative ("./x"); others stay as they are.
func relDot(dir, p string) string {
	if p == "" || !filepath.IsAbs(p) || strings.Contains(p, "://") {
		return p
	}
	r, err := filepath.Rel(dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return p
	}
	return "./" + filepath.ToSlash(r)
}

// joinNetwork attaches every service to the sandbox's services network so
// MySQL and Redis resolve by name.
func joinNetwork(p *types.Project, network string) {
	const key = "sbf_services"
	if p.Networks == nil {
		p.Networks = types.Networks{}
	}
	p.Networks[key] = types.NetworkConfig{Name: network, External: true}
	for name, svc := range p.Services {
		if svc.NetworkMode != "" {
			continue
		}
		if svc.Networks == nil {
			svc.Networks = map[string]*types.ServiceNetworkConfig{"default": nil}
		}
		svc.Networks[key] = nil
		p.Services[name] = svc
	}
	if _, ok := p.Networks["default"]; !ok {
		p.Networks["default"] = types.NetworkConfig{}
	}
}

func bundle(p *types.Project, root, dir string) (*guest.Project, error) {
	resolved, err := p.MarshalYAML()
	if err != nil {
		return nil, fmt.Errorf("rendering the resolved compose file: %w", err)
	}
	out := &guest.Project{Name: p.Name, Root: root, Dir: dir, Resolved: resolved, Services: map[string]string{}}
	for name, svc := range p.Services {
		j, err := json.Marshal(svc)
		if err != nil {
			return nil, err
		}
		out.Services[name] = guest.HashBytes(j)
		for _, ef := range svc.EnvFiles {
			out.Extra = append(out.Extra, rel(dir, ef.Path))
		}
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				out.Extra = append(out.Extra, rel(dir, v.Source))
			}
		}
		if svc.Build != nil && svc.Build.Context != "" && !strings.Contains(svc.Build.Context, "://") {
			out.Extra = append(out.Extra, rel(dir, svc.Build.Context))
		}
	}
	for _, sec := range p.Secrets {
		if sec.File != "" {
			out.Extra = append(out.Extra, rel(dir, sec.File))
		}
	}
	for _, cfg := range p.Configs {
		if cfg.File != "" {
			out.Extra = append(out.Extra, rel(dir, cfg.File))
		}
	}
	for _, e := range out.Extra {
		if e == ".." || strings.HasPrefix(e, "../") || filepath.IsAbs(e) {
			return nil, fmt.Errorf("%s is outside the project directory %s; sbf ships only what is inside it", e, dir)
		}
	}
	sort.Strings(out.Extra)
	out.Extra = slices.Compact(out.Extra)
	h := sha256.New()
	h.Write(resolved)
	for _, e := range out.Extra {
		if err := hashTree(h, root, dir, e); err != nil {
			return nil, fmt.Errorf("hashing %s: %w", e, err)
		}
	}
	out.Bundle = hex.EncodeToString(h.Sum(nil))[:16]
	return out, nil
}

// hashTree folds a file or folder (names and contents) into h, read as
// it ships (guest.WalkShipped: inside the workspace only); a path that
// does not exist adds nothing.
func hashTree(h io.Writer, root, dir, relPath string) error {
	err := guest.WalkShipped(root, dir, relPath, func(e guest.ShippedEntry) error {
		h.Write([]byte(e.Name + "\x00"))
		if e.Content == nil {
			return nil
		}
		_, err := io.Copy(h, e.Content)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func join(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func rel(dir, p string) string {
	if !filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if r, err := filepath.Rel(dir, p); err == nil {
		return r
	}
	return p
}
