//go:build unix

package egress

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// take locks a free slot (non-blocking flock) and returns what releases
// it; the lock also goes when the process does, however it ends.
func (s RelaySlots) take() (release func(), err error) {
	if s.Max <= 0 {
		return func() {}, nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress relay: %w", err)
	}
	start := os.Getpid() % s.Max // relays started together try different slots first
	for i := range s.Max {
		path := filepath.Join(s.Dir, "slot-"+strconv.Itoa((start+i)%s.Max))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("egress relay: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("egress relay: locking %s: %w", path, err)
		}
	}
	return nil, ErrNoRelaySlot
}
