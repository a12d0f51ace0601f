//go:build !darwin

package vz

import "errors"

// productVersion: only macOS has one.
func productVersion() (string, error) { return "", errors.New("not macOS") }
