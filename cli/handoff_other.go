//go:build !unix

package cli

import "errors"

// execServer is unix's: Windows cannot replace a process's program, so
// sbf runs sbf-server as its child there (handOff).
func execServer(string, []string) error { return errors.New("no exec on this platform") }

const canExecServer = false
