// Package guest converges what runs inside a sandbox: the Docker runtime,
// the app's Compose stack and the MySQL/Redis services, plus the
// connection variables the app needs. It only uses a driver's exec and
// copy, so every backend gets it.
package guest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// Project is a compose project ready to ship: the fully resolved compose
// file (interpolated on the host, so the guest needs none of the host's
// variables), the files it still references, and hashes that say whether
// anything changed.
type Project struct {
	Name     string            // compose project name
	Root     string            // the workspace root: every shipped file is read inside it
	Dir      string            // host folder relative paths start from
	Resolved []byte            // the compose file shipped into the guest
	Extra    []string          // env_file files and build contexts, relative to Dir
	Services map[string]string // service → hash of its resolved config
	Bundle   string            // hash of everything shipped
}

// ProjectName is the compose project of a sandbox's app stack.
func ProjectName(sandbox string) string { return "sbf-" + strings.ToLower(sandbox) }

// ProjectError is a compose file that does not load, named so it can be
// shown like any other configuration problem (and coded as one). Problems
// are positioned ones (a path a compose file names outside the workspace);
// Err is the loader's failure otherwise. Unlike spec.Errors it does not
// match spec.ErrInvalid: the loop retries a workspace whose compose files
// are wrong, since a fix to them is no configuration file it watches.
type ProjectError struct {
	File     string
	Err      error
	Problems spec.Errors
}

func (e *ProjectError) Error() string {
	if len(e.Problems) > 0 {
		return e.Problems.Error()
	}
	return e.File + ": " + e.Err.Error()
}

func (e *ProjectError) Unwrap() error { return e.Err }

// Coded is the error's WORKSPACE_CONFIG_INVALID form: a compose file is
// part of the workspace's configuration.
func (e *ProjectError) Coded() *coded.Error {
	if len(e.Problems) > 0 {
		return e.Problems.Coded()
	}
	return coded.New(coded.ConfigInvalid, map[string]any{"errors": []string{e.Err.Error()}, "file": e.File},
		"%s", e.Error())
}

// LoadOptions say how to read a sandbox's compose files.
type LoadOptions struct {
	Root    string       // workspace root
	Compose spec.Compose // the [compose] table
	Sandbox string
	Env     map[string]string // connection variables, available to interpolation
	Environ []string          // the process environment, used only with use_process_env
	Network string            // services network the app joins ("" when none)
}

// HashBytes is the short content hash projects and services carry.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
