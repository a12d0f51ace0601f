package hostpath

import "path/filepath"

// hostName spells a link-free path as the filesystem stores it (case, long
// names), as EvalSymlinks does on Windows: a workspace's id hashes it.
func hostName(real string) string {
	if spelled, err := filepath.EvalSymlinks(real); err == nil {
		return spelled
	}
	return real
}
