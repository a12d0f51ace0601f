package main

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
// overrides.
func (a *app) loadSpec(req *spec.Request) (*spec.Resolved, error) {
	return spec.Load(spec.Options{Root: a.dir, Host: spec.CurrentHost(), ConfigHome: a.configHome(), Request: req})
}
