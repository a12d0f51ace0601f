package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/internal/hostpath"
)

// checkHostPaths holds what a workspace asks of the host to the operator's
// policy: a mount shares only the workspace or a folder the operator
// allowed, never writably anything above the workspace; connection
// variables go to a file inside the workspace that sbf does not protect.
func (r *Resolved) checkHostPaths(allowed []string) Errors {
	var errs Errors
	mounts := func(path string, list []string) {
		for i, m := range list {
			at := fmt.Sprintf("%s[%d]", path, i)
			problem, warning := r.mountProblem(m, allowed)
			if problem != "" {
				errs = append(errs, r.errorAt(at, problem))
			}
			if warning != "" {
				r.Warnings = append(r.Warnings, r.errorAt(at, warning))
			}
		}
	}
	mounts("vm.mounts", r.Config.VM.Mounts)
	for _, name := range r.names {
		if r.origin("sandboxes."+name+".mounts") != nil {
			mounts("sandboxes."+name+".mounts", r.Config.Sandboxes[name].Mounts)
		}
	}
	guard := hostpath.Guard{Protect: r.Config.Sync.Protect}
	for key, target := range map[string]string{"infra.mysql.inject_env_to": r.Config.Infra.MySQL.InjectEnvTo,
		"infra.redis.inject_env_to": r.Config.Infra.Redis.InjectEnvTo} {
		if msg := envTargetProblem(target, guard); msg != "" {
			errs = append(errs, r.errorAt(key, msg))
		}
	}
	return errs
}

// MountLocation is a mount's host folder, as PATH[:GUEST_PATH][:rw] names
// it, made absolute against the workspace.
func MountLocation(root, mount string) (location string, writable bool) {
	parts := strings.Split(mount, ":")
	location = parts[0]
	if n := len(parts); n > 1 {
		writable = parts[n-1] == "rw"
	}
	if location != "" && !filepath.IsAbs(location) && !strings.HasPrefix(location, "~") {
		location = filepath.Join(root, location)
	}
	return location, writable
}

func (r *Resolved) mountProblem(mount string, allowed []string) (problem, warning string) {
	loc, writable := MountLocation(r.Root, mount)
	if strings.HasPrefix(loc, "~") {
		return "names a folder with ~, which sbf does not expand: write an absolute path, or one relative " +
			"to the workspace", ""
	}
	// Outside first, before anything there is looked at: a spec the agent
	// wrote may not learn what exists on the host, nor where a link leads.
	roots := append([]string{r.Root}, allowed...)
	real, missing, err := hostpath.Resolve(loc, roots)
	switch {
	case errors.Is(err, hostpath.ErrOutside), err == nil && !hostpath.Within(real, roots):
		return fmt.Sprintf("shares %s, which is outside the workspace and the folders the operator allowed "+
			"(--allow-path, SBF_ALLOWED_PATHS or the global config's [policy] allowed_paths)", clip(loc)), ""
	case errors.Is(err, fs.ErrNotExist), err == nil && missing != "":
		return fmt.Sprintf("shares %s, which does not exist on this host", clip(loc)), ""
	case err != nil:
		return fmt.Sprintf("cannot share %s: %v", clip(loc), err), ""
	}
	if writable && real != r.Root && hostpath.Within(r.Root, []string{real}) {
		return fmt.Sprintf("shares %s writably, which holds the workspace: the guest could rewrite sbf's "+
			"configuration and .git; share it read-only or share a folder below the workspace", clip(real)), ""
	}
	if writable && hostpath.Within(real, []string{r.Root}) && hostpath.HoldsProtected(real) {
		warning = fmt.Sprintf("shares %s writably, and it holds .git or sbf's configuration: the guest can change "+
			"what git and sbf run on this host; prefer a folder without them, or :ro", clip(real))
	}
	return "", warning
}

func envTargetProblem(target string, guard hostpath.Guard) string {
	if target == "" {
		return ""
	}
	p := filepath.Clean(strings.ReplaceAll(target, "{sandbox}", "sandbox"))
	if filepath.IsAbs(p) || strings.HasPrefix(filepath.ToSlash(target), "/") || p == ".." ||
		strings.HasPrefix(p, ".."+string(filepath.Separator)) || p == "." {
		return "must name a file inside the workspace, relative to it (such as .env or env/{sandbox}.env)"
	}
	if rule, bad := guard.Rule(filepath.ToSlash(p)); bad {
		return fmt.Sprintf("names a protected path (%s: %s)", rule.Pattern, rule.Why)
	}
	return ""
}
