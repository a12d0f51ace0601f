// Package confine lets a process give up, for good, what it does not need
// before it reads files an untrusted party may have written (a workspace a
// guest synced back into): it keeps read access to the folders it names
// and loses every other file, every write, every exec, TCP and IPC out of
// itself. On Linux the kernel enforces it (Landlock); elsewhere, and on a
// Linux without Landlock, Self enforces nothing and says so, and callers
// keep their own explicit checks (they must have them on every OS).
//
// The policy when the kernel offers less than all: best effort. Self
// enforces what the running kernel's Landlock ABI can (files from ABI 1,
// TCP from ABI 4, abstract sockets and signals from ABI 6) and reports it;
// a caller shows the report (sbf's debug log, `sbf doctor`) rather than
// refusing to work on an older kernel.
package confine

import (
	"fmt"
	"strings"
)

// Policy is what a confined process keeps.
type Policy struct {
	// Read lists the folders the process may still read, with everything
	// below them (after links: a rule holds the folder a path names when
	// Self runs). Nothing else can be read, nothing written or executed.
	Read []string
}

// Mechanisms a Report names.
const (
	Landlock = "landlock"
	None     = "none"
)

// Report says what a confinement enforces.
type Report struct {
	Mechanism string `json:"mechanism"`     // Landlock or None
	ABI       int    `json:"abi,omitempty"` // the kernel's Landlock ABI, 0 without
	// Files: reads only below Policy.Read; no write, no exec anywhere.
	Files bool `json:"files"`
	// Network: no TCP connect or bind (UDP stays open below ABI 10).
	Network bool `json:"network"`
	// IPC: no abstract unix socket or signal reaches a process outside.
	IPC bool `json:"ipc"`
	// Why is what keeps the rest from being enforced ("" when nothing).
	Why string `json:"why,omitempty"`
}

// Full reports whether everything this package knows to restrict is.
func (r Report) Full() bool { return r.Files && r.Network && r.IPC }

func (r Report) String() string {
	if r.Mechanism != Landlock {
		return "unconfined (" + r.Why + ")"
	}
	var kept, lost []string
	for _, c := range []struct {
		on   bool
		what string
	}{{r.Files, "files read-only to its folders, no write or exec"}, {r.Network, "no TCP"},
		{r.IPC, "no signals or abstract sockets out"}} {
		if c.on {
			kept = append(kept, c.what)
		} else {
			lost = append(lost, c.what)
		}
	}
	s := fmt.Sprintf("Landlock ABI %d: %s", r.ABI, strings.Join(kept, "; "))
	if len(lost) > 0 {
		s += " (not enforced: " + strings.Join(lost, "; ") + ": " + r.Why + ")"
	}
	return s
}

// reportFor is what an ABI enforces.
func reportFor(abi int) Report {
	if abi < 1 {
		return Report{Mechanism: None, Why: "this kernel has no Landlock (or it is disabled at boot)"}
	}
	r := Report{Mechanism: Landlock, ABI: abi, Files: true, Network: abi >= 4, IPC: abi >= 6}
	if !r.Full() {
		r.Why = fmt.Sprintf("Landlock ABI %d is older than 6", abi)
	}
	return r
}
