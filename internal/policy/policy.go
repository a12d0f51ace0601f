// Package policy is the operator's word on what one sbf process may do on
// this host: which workspaces it serves, which host folders it may read,
// write and mount besides a workspace, whether a driver that runs guest
// commands on the host may run at all, and the ceilings of the limits a
// workspace or a caller may only lower (instances, lease lengths, output
// and copy sizes). It is loaded once, when the process
// starts, from its flags, its environment and the global config — never
// from a workspace file or a tool argument — so requests and guest output
// can only narrow it.
package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// WorkspaceNotAllowed is the code of a workspace outside the served roots.
const WorkspaceNotAllowed = "WORKSPACE_NOT_ALLOWED"

// EnableSimVar is the environment variable that lets the sim driver, whose
// "guest" commands run on this host, run: tests and demos set it.
const EnableSimVar = "SBF_ENABLE_SIM"

// Policy is what the operator allowed.
type Policy struct {
	// WorkspaceRoots are the folders whose workspaces (the folder itself and
	// every folder below it) an MCP server may serve. Empty serves any
	// workspace: the CLI, where the operator names each one.
	WorkspaceRoots []string
	// AllowedPaths are host folders besides the workspace that copy, sync,
	// artifact tools and [vm] mounts may use.
	AllowedPaths []string
	// HostExec lets a driver that runs guest commands on this host run.
	HostExec bool
	// Reserved are the host places guest data never lands in (sbf's config
	// and state, shell startup files…), located from the environment.
	Reserved *hostpath.Places
	// Ceilings are the operator's limits (Defaulted: the output and copy
	// ones are always set).
	Ceilings Ceilings
	// GuestHostPorts are the ports of this host a guest may reach, whatever
	// its egress mode (Lima/QEMU's host guard); none by default.
	GuestHostPorts []int
}

// Sources are where a policy is read from; cmd/ fills them.
type Sources struct {
	Getenv func(string) string
	// Global is the [policy] table of the global config, nil when absent.
	Global *Global
	// WorkspaceRoots and AllowedPaths come from flags (-C, --workspace-root,
	// --allow-path).
	WorkspaceRoots []string
	AllowedPaths   []string
}

// Global is the [policy] table of ~/.config/sandboxforge/config.toml. It
// cannot enable a host-executing driver: only the environment can.
type Global struct {
	Path           string // the file, named where its ceilings are shown
	WorkspaceRoots []string
	AllowedPaths   []string
	// Ceilings; zero: not set.
	MaxInstances   int
	MaxTTL         time.Duration
	MaxLifetime    time.Duration
	MaxOutputBytes int64
	MaxCopyBytes   int64
	MaxCPUs        int
	MaxMemoryGiB   float64
	MaxDiskGiB     float64
	GuestHostPorts []int
}

// Load combines the sources: lists add up, folders become absolute and
// symlink-free (a folder that does not exist is an error: a typo must not
// silently serve nothing, or something else later).
func Load(src Sources) (Policy, error) {
	getenv := src.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var p Policy
	var roots, paths []string
	roots = append(roots, src.WorkspaceRoots...)
	roots = append(roots, filepath.SplitList(getenv("SBF_WORKSPACE_ROOTS"))...)
	paths = append(paths, src.AllowedPaths...)
	paths = append(paths, filepath.SplitList(getenv("SBF_ALLOWED_PATHS"))...)
	if src.Global != nil {
		roots = append(roots, src.Global.WorkspaceRoots...)
		paths = append(paths, src.Global.AllowedPaths...)
	}
	var err error
	if p.WorkspaceRoots, err = folders(getenv, "workspace root", roots); err != nil {
		return Policy{}, err
	}
	if p.AllowedPaths, err = folders(getenv, "allowed path", paths); err != nil {
		return Policy{}, err
	}
	p.HostExec = getenv(EnableSimVar) == "1"
	p.Reserved = hostpath.NewPlaces(getenv)
	if p.Ceilings, err = ceilings(src.Global, getenv); err != nil {
		return Policy{}, err
	}
	if src.Global != nil {
		p.GuestHostPorts = src.Global.GuestHostPorts
	}
	return p, nil
}

// folders are the operator's folders of one setting, each absolute and
// real, and each a folder of data (hostpath.AllowedFolder): never the home
// folder, a folder above it or one of the user's configuration.
func folders(getenv func(string) string, what string, list []string) ([]string, error) {
	var out []string
	for _, f := range list {
		if strings.TrimSpace(f) == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err == nil {
			abs, err = hostpath.Real(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, f, err)
		}
		if err := hostpath.AllowedFolder(getenv, what, abs); err != nil {
			return nil, err
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}

// Workspace checks that root (absolute, symlink-free) may be served: it
// lies in one of the operator's roots and, when the MCP client declared
// roots of its own (client non-nil), in one of those too.
func (p Policy) Workspace(root string, client []string) error {
	return p.WorkspaceAs(root, root, client)
}

// WorkspaceAs is Workspace whose refusal names the folder as the caller
// gave it (given), never where it led: a refusal tells nothing about the
// host that the caller did not already say.
func (p Policy) WorkspaceAs(root, given string, client []string) error {
	readcount.Add(readcount.Policy)
	if len(p.WorkspaceRoots) > 0 && !hostpath.Within(root, p.WorkspaceRoots) {
		return p.NotServed(given)
	}
	if client != nil && !hostpath.Within(root, client) {
		return notAllowed(given, client, "the roots the MCP client declared", "a client root that holds it")
	}
	return nil
}

// NotServed is the refusal of a folder that leads outside the operator's
// roots, naming it as the caller gave it.
func (p Policy) NotServed(given string) error {
	return notAllowed(given, p.WorkspaceRoots, "the folders this server was started for", "--workspace-root DIR")
}

func notAllowed(given string, roots []string, whose, fix string) error {
	shown := roots
	if len(shown) == 0 {
		shown = []string{"none"}
	}
	given = coded.Clip(given)
	return coded.New(WorkspaceNotAllowed, map[string]any{"workspace_root": given, "allowed_roots": roots},
		"%s is outside %s (%s); serve it with %s", given, whose, strings.Join(shown, ", "), fix)
}

// HostPaths is where host-side file tools may read and write for a
// workspace: the workspace first, then the operator's allowed paths.
func (p Policy) HostPaths(workspace string) hostpath.Policy {
	return hostpath.Policy{Roots: append([]string{workspace}, p.AllowedPaths...), Reserved: p.Reserved,
		MaxCopyBytes: p.Ceilings.Defaulted().MaxCopyBytes.Value}
}

// GlobalFile is the global config, relative to the config home: the one
// file besides flags and environment that may widen the policy.
const GlobalFile = "sandboxforge/config.toml"

// ReadGlobal reads the [policy] table of the global config (nil when the
// file or the table is absent). configHome "" reads nothing.
func ReadGlobal(configHome string) (*Global, error) {
	if configHome == "" {
		return nil, nil
	}
	path := filepath.Join(configHome, GlobalFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading [policy] of %s: %w", path, err)
	}
	table, ok := doc["policy"].(map[string]any)
	if !ok {
		return nil, nil
	}
	g := &Global{Path: path}
	for key, val := range table {
		if key == "guest_host_ports" {
			if g.GuestHostPorts, err = readPorts(path, val); err != nil {
				return nil, err
			}
			continue
		}
		if slices.Contains(limitKeys, key) {
			if err := globalLimit(g, key, val); err != nil {
				return nil, err
			}
			continue
		}
		var into *[]string
		switch key {
		case "workspace_roots":
			into = &g.WorkspaceRoots
		case "allowed_paths":
			into = &g.AllowedPaths
		default:
			return nil, fmt.Errorf("%s: policy.%s is not a policy key (allowed: allowed_paths, guest_host_ports, "+
				"workspace_roots, %s; a host-executing driver is enabled only by %s=1 in sbf's environment)", path, key,
				strings.Join(limitKeys, ", "), EnableSimVar)
		}
		list, _ := val.([]any)
		for _, item := range list {
			str, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("%s: policy.%s must be a list of folders", path, key)
			}
			*into = append(*into, str)
		}
		if list == nil {
			return nil, fmt.Errorf("%s: policy.%s must be a list of folders", path, key)
		}
	}
	return g, nil
}

// readPorts reads guest_host_ports: a list of port numbers.
func readPorts(path string, val any) ([]int, error) {
	list, ok := val.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: policy.guest_host_ports must be a list of ports", path)
	}
	ports := []int{}
	for _, item := range list {
		n, ok := item.(int64)
		if !ok || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: policy.guest_host_ports: %v is not a port (1-65535)", path, item)
		}
		ports = append(ports, int(n))
	}
	return ports, nil
}
