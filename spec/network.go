package spec

import (
	"fmt"
	"slices"

	"github.com/sandboxforge/sbf/egress"
)

// Network is [network] (and [sandboxes.NAME.network], which starts from it):
// what a sandbox's guest may reach, enforced outside the guest (docs/egress.md).
type Network struct {
	Egress string   `toml:"egress" json:"egress" enum:"allow,deny,allowlist" doc:"allow: the network as the driver gives it; deny: no route out; allowlist: only through sbf's egress proxy, only to what allow lists. Drivers that cannot enforce deny or allowlist refuse them (POLICY_UNSUPPORTED)."`
	Allow  []string `toml:"allow" json:"allow" check:"nonempty_items,egress_rule" doc:"What egress = \"allowlist\" lets through: host names (pypi.org), *.suffix names, IP addresses and CIDR ranges, each optionally :PORT (default ports 80 and 443)."`
}

// Restricted reports whether the guest's network is narrowed at all.
func (n Network) Restricted() bool { return n.Egress != "" && n.Egress != string(egress.ModeAllow) }

// narrowerNetwork reports why a request's network is wider than the files'
// (the operator's and the committed spec's), or "" when it only narrows: deny
// is narrower than an allowlist, an allowlist narrower than allow, and one
// allowlist narrower than another when each entry is one of the other's.
func narrowerNetwork(files, req Network) string {
	rank := map[string]int{"deny": 0, "allowlist": 1, "allow": 2, "": 2}
	switch {
	case rank[req.Egress] > rank[files.Egress]:
		return fmt.Sprintf("egress %q is wider than the workspace's %q", req.Egress, files.Egress)
	case req.Egress == "allowlist" && files.Egress == "allowlist":
		for _, entry := range req.Allow {
			if !slices.Contains(files.Allow, entry) {
				return fmt.Sprintf("allow entry %q is not in the workspace's allowlist", entry)
			}
		}
	}
	return ""
}

// checkRequestNarrows holds a request's network keys to narrowing: the
// workspace is resolved again without the request, and each sandbox's
// network compared (a sandbox the request declares is compared with
// [network]).
func (src *sources) checkRequestNarrows(r *Resolved, managed *Managed) Errors {
	if !touchesNetwork(src.opts.Request.l.tree) {
		return nil
	}
	bare := *src
	bare.opts.Request = nil
	files, err := bare.resolve(managed)
	if err != nil {
		return nil // the files' own problems are reported by the run with the request
	}
	var errs Errors
	if why := narrowerNetwork(files.Config.Network, r.Config.Network); why != "" {
		errs = append(errs, r.errorAt("network", "a request may only narrow the network policy: "+why))
	}
	for _, name := range r.names {
		base := files.Config.Network
		if sb, ok := files.Config.Sandboxes[name]; ok {
			base = sb.Network
		}
		if why := narrowerNetwork(base, r.Config.Sandboxes[name].Network); why != "" {
			errs = append(errs, r.errorAt("sandboxes."+name+".network",
				"a request may only narrow the network policy: "+why))
		}
	}
	return errs
}

func touchesNetwork(tree map[string]any) bool {
	if _, ok := tree["network"]; ok {
		return true
	}
	sandboxes, _ := tree["sandboxes"].(map[string]any)
	for _, t := range sandboxes {
		if m, ok := t.(map[string]any); ok && m["network"] != nil {
			return true
		}
	}
	return false
}
