//go:build !unix

package sim

import "os"

// readRecord reads a record file; buf is the read buffer the unix build
// reuses across a listing (readrecord_unix.go says why it matters there).
func readRecord(path string, _ []byte) ([]byte, error) { return os.ReadFile(path) }
