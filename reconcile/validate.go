package reconcile

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/spec"
)

// Validation is the verdict on a workspace's desired state: every problem
// of every layer, and of the compose and services files it names.
type Validation struct {
	Root     string
	ID       string
	Resolved *spec.Resolved // nil when the layers themselves do not load
	Errors   spec.Errors
	Warnings spec.Errors // what sbf corrected on its own (a clamped lease)
}

// Valid reports whether nothing is wrong.
func (v *Validation) Valid() bool { return len(v.Errors) == 0 }

// Err is the problems as one error (WORKSPACE_CONFIG_INVALID), or nil.
func (v *Validation) Err() error {
	if v.Valid() {
		return nil
	}
	return v.Errors
}

// ValidateOptions say what a validation may do without.
type ValidateOptions struct {
	// EnvOptional checks the shape without the environment: a ${VAR} it
	// does not set is a warning (plan and apply still need it), so a pull
	// request from a fork, which CI gives no secrets, validates.
	EnvOptional bool
}

// Validate checks a workspace the same way whatever the front door: the
// layered configuration first, then (when it is valid) the compose
// projects and services it declares, loaded on the host. An unset ${VAR}
// is an error.
func (e *Engine) Validate(ctx context.Context, ws spec.Options) (*Validation, error) {
	return e.ValidateWith(ctx, ws, ValidateOptions{})
}

// ValidateWith is Validate with options.
func (e *Engine) ValidateWith(ctx context.Context, ws spec.Options, o ValidateOptions) (*Validation, error) {
	ws.Now = e.Clock.Now()
	r, err := e.Load(ws)
	var specErrs spec.Errors
	if err != nil && !errors.As(err, &specErrs) {
		return nil, err
	}
	v := &Validation{Errors: specErrs}
	if r == nil {
		v.Root, _ = filepath.Abs(ws.Root)
		return v, nil
	}
	v.Root, v.ID, v.Resolved, v.Warnings = r.Root, r.WorkspaceID, r, r.Warnings
	if !v.Valid() {
		return v, nil
	}
	err = CheckLayers(ctx, r, e.Env)
	if unset := unsetEnv(err); o.EnvOptional && len(unset) > 0 {
		// Check the rest of the shape as if the variables were set.
		err = CheckLayers(ctx, r, envWithPlaceholders(e.Env))
		for _, u := range unset {
			v.Warnings = append(v.Warnings, spec.Error{File: spec.FileName, Key: "sandboxes",
				Message: u.Error() + "; plan and apply need it (validate --strict makes this an error)"})
		}
	}
	if err != nil {
		v.Errors = layerErrors(err)
	}
	return v, nil
}

// unsetEnv lists the problems of a layer check that are unset ${VAR}s.
func unsetEnv(err error) []error {
	var out []error
	for _, e := range unjoin(err) {
		var u *guest.UnsetEnvError
		if e != nil && errors.As(e, &u) {
			out = append(out, e)
		}
	}
	return out
}

// envWithPlaceholders stands a placeholder in for every variable the
// environment does not set.
func envWithPlaceholders(env LayerEnv) LayerEnv {
	lookup := env.getenv
	env.Getenv = func(k string) string {
		if v := lookup(k); v != "" {
			return v
		}
		return "unset-" + k
	}
	return env
}

// layerErrors turns compose and services problems into validation errors
// naming their file (and position, for a path a compose file names outside
// the workspace).
func layerErrors(err error) spec.Errors {
	var out spec.Errors
	for _, e := range unjoin(err) {
		var pe *guest.ProjectError
		if errors.As(e, &pe) && len(pe.Problems) > 0 {
			out = append(out, pe.Problems...)
			continue
		}
		if errors.As(e, &pe) {
			out = append(out, spec.Error{File: pe.File, Key: "compose", Message: pe.Err.Error()})
			continue
		}
		out = append(out, spec.Error{File: spec.FileName, Key: "sandboxes", Message: e.Error()})
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
