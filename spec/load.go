package spec

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// File names, oldest first: later names win when both exist.
var (
	globalFiles = []string{
		"lima-mcp/config.toml",
		"orbitforge-mcp/config.toml",
		"sandboxforge-mcp/config.toml",
		"sandboxforge/config.toml",
	}
	workspaceFiles = []string{".lima-mcp.toml", ".orbitforge.toml", FileName}
)

const (
	// FileName is the committed workspace spec.
	FileName = ".sandboxforge.toml"
	// LocalFileName holds a person's uncommitted overrides.
	LocalFileName = ".sandboxforge.local.toml"
	// Dir holds what sbf writes: managed overrides, state, locks.
	Dir = ".sandboxforge"
	// OverridesFile is written only by sbf, inside Dir.
	OverridesFile = "overrides.toml"
	// SourceDefaults and SourceRequest name the layers that are not files.
	SourceDefaults = "defaults"
	SourceRequest  = "request_overrides"
)

// Options says where to look. Nothing here reads the process environment;
// cmd/ does that and passes the answers in.
type Options struct {
	Root string // workspace root; resolved to an absolute, symlink-free path
	// ID, when set, is Root's workspace id: whoever built the options
	// resolved Root already (WorkspaceIdentity), and nothing resolves it
	// again. A request resolves its workspace once.
	ID         string
	Host       Host     // decides host-aware defaults
	ConfigHome string   // $XDG_CONFIG_HOME, or $HOME/.config; empty skips global files
	Request    *Request // per-call overrides, not persisted
	// Managed, when set, stands in for the managed overrides file: an edit
	// can be planned before it is written.
	Managed *Managed
	// Now, when set, also bounds leases by the current time (see
	// ClampLease); the package itself never reads the clock.
	Now time.Time
	// AllowedPaths are the host folders besides the workspace that the
	// operator allows [vm] mounts to share (operator policy).
	AllowedPaths []string
	// Ceilings are the operator's limits: every layer may lower them, none
	// may raise them (see applyCeilings).
	Ceilings policy.Ceilings
	// Backends are the backends this build links (drivers.Linked): the
	// values a driver key may name and the settings tables a VM may hold.
	Backends Backends
}

// Resolved is the desired state of one workspace.
type Resolved struct {
	Root        string   `json:"workspace_root"`
	WorkspaceID string   `json:"workspace_id"`
	Sources     []string `json:"sources"`
	Config      Config   `json:"config"`
	Host        Host     `json:"-"`
	// AdHoc names sandboxes declared only in the managed overrides (by
	// 'sbf up NAME' or create_instance), not by any file a person edits.
	AdHoc map[string]bool `json:"-"`
	// Warnings are problems sbf corrected on its own, such as a lease end
	// edited past the lease policy or a limit above the operator's ceiling.
	Warnings Errors `json:"warnings,omitempty"`
	// Ceilings are the operator's limits, the values in effect and where
	// each came from.
	Ceilings []Ceiling `json:"ceilings,omitempty"`
	layers   []*layer  // the layers merged, last the strongest (origin)
	names    []string  // Config.Sandboxes' names as resolved, sorted: the order resolve's checks walk
	src      *sources  // the file layers it was resolved from
}

// Load resolves the layered desired state. When any layer has problems it
// returns a Resolved carrying the root, id and sources, plus Errors listing
// every problem in every layer.
func Load(opts Options) (*Resolved, error) {
	readcount.Add(readcount.SpecLoad)
	opts.Host = opts.Host.With(opts.Backends)
	root, id, err := opts.Identity()
	if err != nil {
		return nil, Errors{{File: opts.Root, Message: err.Error()}}
	}
	var files []*layer
	var errs Errors
	for _, f := range layerFiles(root, opts.ConfigHome) {
		l, layerErrs := readFileLayer(f, opts.Backends)
		errs = append(errs, layerErrs...)
		if l != nil {
			files = append(files, l)
		}
	}
	src := &sources{opts: opts, root: root, id: id, files: files, fileErrs: errs}
	return src.resolve(opts.Managed)
}

// sources are a workspace's file layers, read once: an edit of the
// managed overrides is resolved again (WithManaged) without reading them.
type sources struct {
	opts     Options
	root, id string
	files    []*layer
	fileErrs Errors
	// read is the managed overrides document as the last resolve that read
	// the file found it (nil: none did), so an edit starts from it and a
	// re-read after the locks happens only when the file changed.
	read *managedRead
}

// WithManaged resolves the workspace again with m standing in for its
// managed overrides document, reusing the files Load read.
func (r *Resolved) WithManaged(m *Managed) (*Resolved, error) {
	if r.src == nil {
		opts := Options{Root: r.Root, Host: r.Host, Managed: m}
		return Load(opts)
	}
	return r.src.resolve(m)
}

func (src *sources) resolve(managed *Managed) (*Resolved, error) {
	readcount.Add(readcount.SpecMerge)
	var ml *layer
	var mlErrs Errors
	if managed == nil {
		read := readManagedFile(src.root)
		ml, mlErrs = read.layer(src.root, src.opts.Backends)
		fresh := *src // a Resolved's sources never change: another may share them
		fresh.read, src = &read, &fresh
	} else {
		ml, mlErrs = managedLayer(src.root, managed, src.opts.Backends)
	}
	opts, root := src.opts, src.root
	r := &Resolved{Root: root, WorkspaceID: src.id, Sources: []string{SourceDefaults}, Host: opts.Host,
		Config: Defaults(opts.Host), src: src}
	errs := append(Errors{}, src.fileErrs...)
	var layers []*layer
	add := func(l *layer, layerErrs Errors) {
		errs = append(errs, layerErrs...)
		if l != nil {
			layers = append(layers, l)
			r.Sources = append(r.Sources, l.source)
		}
	}
	for _, l := range src.files {
		add(l, nil)
	}
	add(ml, mlErrs)
	if opts.Request != nil {
		// Validation rewrites a tree into canonical values; the request is
		// loaded again by every resolve, so each one checks a fresh copy.
		l := opts.Request.layer()
		add(l, validateLayer(l, false, opts.Backends))
	}
	if len(errs) > 0 {
		return r, errs
	}
	merged := map[string]any{}
	for _, l := range layers {
		mergeTrees(merged, cloneTree(l.tree))
	}
	r.layers = layers
	assign(merged, reflect.ValueOf(&r.Config).Elem())
	r.Config.Sandboxes = resolveSandboxes(merged, r.Config.VM, r.Config.Network)
	r.names = slices.Sorted(maps.Keys(r.Config.Sandboxes))
	r.Config.Pools = resolvePools(merged, r.Config.VM)
	r.AdHoc = adHocSandboxes(layers, r.Config.Sandboxes, filepath.Join(root, Dir, OverridesFile))
	r.applyCeilings(opts.Ceilings, layers)
	errs = append(r.holdVMSizes(opts.Ceilings), r.crossCheck()...)
	errs = append(errs, r.checkHostPaths(opts.AllowedPaths)...)
	errs = append(errs, r.checkBackends(opts.Backends)...)
	if opts.Request != nil {
		errs = append(errs, src.checkRequestNarrows(r, managed)...)
	}
	if len(errs) > 0 {
		errs.sortBySource(r.Sources)
		return r, errs
	}
	r.clampLeases(opts.Now)
	return r, nil
}

// layerFile is a file layer; global ones are the operator's.
type layerFile struct {
	path   string
	global bool
}

func layerFiles(root, configHome string) []layerFile {
	var files []layerFile
	if configHome != "" {
		for _, f := range globalFiles {
			files = append(files, layerFile{filepath.Join(configHome, f), true})
		}
	}
	for _, f := range workspaceFiles {
		files = append(files, layerFile{filepath.Join(root, f), false})
	}
	return append(files, layerFile{filepath.Join(root, LocalFileName), false})
}

// ConfigFiles lists every file Load reads for the workspace at root, in
// merge order: the global ones under configHome (none when it is empty),
// the workspace's under its current and older names, its local overrides
// and the managed overrides sbf writes. The reconcile loop watches them.
func ConfigFiles(root, configHome string) []string {
	var out []string
	for _, f := range layerFiles(root, configHome) {
		out = append(out, f.path)
	}
	return append(out, filepath.Join(root, Dir, OverridesFile))
}

// readFileLayer reads one file layer. The [policy] table belongs to the
// operator: the global config's is read by the policy package, and a
// workspace's is an error, since it would widen what sbf may do here.
func readFileLayer(f layerFile, b Backends) (*layer, Errors) {
	l, errs := readLayer(f.path, false, b)
	if l != nil {
		l.global = f.global
	}
	if l == nil || l.tree["policy"] == nil {
		return l, errs
	}
	if !f.global {
		errs = append(errs, l.errorAt("policy", true, "is the operator's to set: in the global config's [policy] "+
			"or with sbf's flags and environment; a workspace file cannot widen what sbf may do on this host"))
	}
	delete(l.tree, "policy")
	return l, errs
}

// readLayer parses and validates one file. A missing or empty file is no
// layer at all; a broken one is reported and still named as a source.
func readLayer(path string, managed bool, b Backends) (*layer, Errors) {
	data, err := readLimited(path, DefaultLimits.MaxBytes)
	return layerOf(path, data, err, managed, b)
}

// layerOf is readLayer for a file read.
func layerOf(path string, data []byte, err error, managed bool, b Backends) (*layer, Errors) {
	var big *tooLarge
	var own *ownfile.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &big):
		return newLayer(path), Errors{{File: path, Message: DefaultLimits.sizeMessage(int(big.size))}}
	case errors.As(err, &own):
		return newLayer(path), Errors{{File: own.Path, Message: own.Reason()}}
	case err != nil:
		return newLayer(path), Errors{{File: path, Message: fmt.Sprintf("cannot read: %v", err)}}
	}
	l, err := parseLayer(path, data)
	if err != nil {
		return newLayer(path), Errors{err.(Error)}
	}
	policyTable, hasPolicy := l.tree["policy"]
	delete(l.tree, "policy") // see readFileLayer
	if len(l.tree) == 0 && !hasPolicy {
		return nil, nil
	}
	errs := validateLayer(l, managed, b)
	if hasPolicy {
		l.tree["policy"] = policyTable
	}
	return l, errs
}

// managedLayer is the managed overrides layer of a document m that stands
// in for the file (an edit planned before it is written).
func managedLayer(root string, m *Managed, b Backends) (*layer, Errors) {
	path := filepath.Join(root, Dir, OverridesFile)
	if len(m.tree) == 0 {
		return nil, nil
	}
	l := newLayer(path)
	l.tree = cloneTree(m.tree)
	return l, validateLayer(l, true, b)
}

func adHocSandboxes(layers []*layer, sandboxes map[string]Sandbox, managedPath string) map[string]bool {
	byPerson := map[string]bool{}
	for _, l := range layers {
		if l.source == managedPath {
			continue
		}
		t, _ := l.tree["sandboxes"].(map[string]any)
		for name := range t {
			byPerson[name] = true
		}
	}
	out := map[string]bool{}
	for name := range sandboxes {
		if !byPerson[name] {
			out[name] = true
		}
	}
	return out
}

// WorkspaceIdentity resolves a workspace root and derives its id the way
// SandboxForge v1 did: "ws_" + the first 12 hex digits of the SHA-1 of
// the absolute, symlink-resolved path.
func WorkspaceIdentity(root string) (abs, id string, err error) {
	readcount.Add(readcount.Resolve)
	if root == "" {
		root = "."
	}
	abs, err = filepath.Abs(root)
	if err != nil {
		return "", "", fmt.Errorf("resolving workspace_root %q: %w", root, err)
	}
	resolved, err := hostpath.Real(abs)
	if err != nil {
		return "", "", fmt.Errorf("workspace_root does not exist: %s", abs)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", "", fmt.Errorf("workspace_root does not exist: %s", resolved)
	}
	if !info.IsDir() {
		return "", "", fmt.Errorf("workspace_root must be a directory: %s", resolved)
	}
	return resolved, WorkspaceIDOf(resolved), nil
}

// WorkspaceIDOf is the id of the workspace at a resolved root.
func WorkspaceIDOf(resolved string) string {
	sum := sha1.Sum([]byte(resolved))
	return "ws_" + hex.EncodeToString(sum[:])[:12]
}

// Identity is the workspace's resolved root and id: as the options carry
// them (ID set), else resolved now.
func (o Options) Identity() (root, id string, err error) {
	if o.ID != "" {
		return o.Root, o.ID, nil
	}
	return WorkspaceIdentity(o.Root)
}

// Resolved are the options with their root resolved once, for every step
// of a request to reuse.
func (o Options) Resolved() (Options, error) {
	root, id, err := o.Identity()
	if err != nil {
		return o, err
	}
	o.Root, o.ID = root, id
	return o, nil
}

// origin is the last layer that set path (keys joined with dots), nil
// when none did. The layers' trees are asked, not an index of every key
// of every layer: a load asks a few paths of each sandbox, and building
// the index cost more than all the asking.
func (r *Resolved) origin(path string) *layer {
	for i := len(r.layers) - 1; i >= 0; i-- {
		if treeHas(r.layers[i].tree, path) {
			return r.layers[i]
		}
	}
	return nil
}

// treeHas says whether t holds path; a key may itself hold dots (quoted),
// so each dot is tried as the end of the first key.
func treeHas(t map[string]any, path string) bool {
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '.' {
			continue
		}
		v, ok := t[path[:i]]
		if !ok {
			continue
		}
		if i == len(path) {
			return true
		}
		if sub, isTable := v.(map[string]any); isTable && treeHas(sub, path[i+1:]) {
			return true
		}
	}
	return false
}

// errorAt points at where the winning value for path (or the nearest
// enclosing key that has one) was written.
func (r *Resolved) errorAt(path, msg string) Error {
	for p := path; p != ""; {
		if l := r.origin(p); l != nil {
			return l.errorAt(path, false, msg)
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return Error{File: SourceDefaults, Key: path, Message: msg}
}
