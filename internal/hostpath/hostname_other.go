//go:build !windows

package hostpath

// hostName is the path as the walk found it: names are compared as spelled.
func hostName(real string) string { return real }
