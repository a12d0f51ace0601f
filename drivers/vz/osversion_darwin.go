//go:build darwin

package vz

import "golang.org/x/sys/unix"

// productVersion is the macOS version ("14.5").
func productVersion() (string, error) { return unix.Sysctl("kern.osproductversion") }
