//go:build !darwin

package vz

import "errors"

// clone: clonefile is APFS's; elsewhere the caller copies.
func clone(string, string) error { return errors.New("clonefile needs macOS") }
