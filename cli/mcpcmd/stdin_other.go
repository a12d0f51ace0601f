//go:build !unix

package mcpcmd

import "io"

// polledInput is in as it is: the poller reads pipes on unix only.
func polledInput(in io.Reader) (io.Reader, func()) { return in, func() {} }
