package confine

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Probe reports what Self would enforce on this kernel, changing nothing.
func Probe() Report { return reportFor(kernelABI()) }

// Self confines this process (every thread, and any child it would start)
// to p, for good, with the most the kernel's Landlock can enforce (see
// the package's policy), and reports what that is. An error means the
// kernel has Landlock and it could not be applied: the caller must not go
// on to read what it meant to confine.
func Self(p Policy) (Report, error) {
	rep := Probe()
	if rep.Mechanism != Landlock {
		return rep, nil
	}
	var dirs, files []string
	for _, path := range p.Read {
		info, err := os.Stat(path)
		if err != nil {
			return rep, fmt.Errorf("confining this process to %s: %w", path, err)
		}
		if info.IsDir() {
			dirs = append(dirs, path)
		} else {
			files = append(files, path)
		}
	}
	read := landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir)
	rules := []landlock.Rule{landlock.PathAccess(read, dirs...),
		landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadFile), files...)}
	// The newest ABI this library knows, lowered to the kernel's: every
	// right it handles and no rule grants is denied (writes, exec, TCP,
	// signals and abstract sockets out of the domain).
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return rep, fmt.Errorf("confining this process with Landlock: %w", err)
	}
	return rep, nil
}

// kernelABI is the Landlock ABI go-landlock will use here: the kernel's,
// lowered to 5 when the kernel's signal scoping has a known bug (as the
// library decides, so the report says what is really enforced).
func kernelABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	if v >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return v
}
