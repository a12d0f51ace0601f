package egress

import "errors"

// ErrNoRelaySlot is a relay that found every slot of its VM taken.
var ErrNoRelaySlot = errors.New("egress relay: every relay slot of this VM is taken")

// DefaultMaxRelays is how many relays of one VM may run at once. A relay
// lives from QEMU's fork until the proxy holds its connection (a few
// milliseconds), so this bounds a burst of guest connections, not how many
// the guest keeps open (the proxy's cap, 128, does); each costs about 2 MiB
// of private memory (13 MiB resident, most of it the shared binary).
const DefaultMaxRelays = 64

// RelaySlots bounds the relays of one VM: each holds a lock on one of Max
// files in Dir for its life, and one that finds none free exits at once.
// A zero Max means no bound.
type RelaySlots struct {
	Dir string
	Max int
}
