package confine

import (
	"fmt"
	"strings"
	"time"
)

// Limits are what a process may still spend once it bounds itself: CPU
// time, and address space beyond what it has mapped when it does. A
// process past its CPU time is killed by the kernel (SIGKILL: soft and
// hard limits are equal); one past its address space fails to map more,
// which the Go runtime reports as "out of memory" before it exits.
type Limits struct {
	CPU          time.Duration
	AddressSpace int64
}

// LimitsReport says which limits a process set on itself.
type LimitsReport struct {
	CPU          bool   `json:"cpu"`
	AddressSpace int64  `json:"address_space,omitempty"` // the whole limit set, 0 when none
	Why          string `json:"why,omitempty"`           // what kept a limit from being set
}

func (r LimitsReport) String() string {
	var set []string
	if r.CPU {
		set = append(set, "CPU time")
	}
	if r.AddressSpace > 0 {
		set = append(set, fmt.Sprintf("address space (%d MiB)", r.AddressSpace>>20))
	}
	s := "limits: none"
	if len(set) > 0 {
		s = "limits: " + strings.Join(set, ", ")
	}
	if r.Why != "" {
		s += " (" + r.Why + ")"
	}
	return s
}
