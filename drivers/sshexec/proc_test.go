package sshexec

import (
	"os"
	"strconv"
	"strings"
)

// processExists reports whether pid is a live (not zombie) process.
func processExists(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}
