package cli

import (
	"path/filepath"

	"github.com/sandboxforge/sbf/spec"
)

// configHome is where global config files live: $XDG_CONFIG_HOME, else
// $HOME/.config.
func (a *app) configHome() string {
	if x := a.getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

// loadSpec resolves the workspace's desired state with optional request
// overrides, as the engine resolves it (under the operator's policy).
func (a *app) loadSpec(req *spec.Request) (*spec.Resolved, error) {
	return a.loadSpecAt(a.dir, req)
}

func (a *app) loadSpecAt(root string, req *spec.Request) (*spec.Resolved, error) {
	eng, err := a.engine("load", engineFlags{})
	if err != nil {
		return nil, err
	}
	return eng.Load(spec.Options{Root: root, Host: spec.CurrentHost(), ConfigHome: a.configHome(), Request: req})
}
