// Package egress enforces a sandbox's network egress policy from outside the
// guest: a policy of allowed names, addresses and ports ([network] egress and
// allow in the spec), an HTTP proxy that applies it (CONNECT and plain
// absolute-URI HTTP), a JSON-lines log of every decision, and the rewrite of
// QEMU's user-mode network that leaves the guest no other way out.
//
// How the pieces fit for a Lima/QEMU sandbox (see docs/egress.md):
//
//   - RestrictNetdev turns Lima's `-netdev user,…` into one with restrict=on
//     (the guest reaches neither the host nor the outside; Lima's SSH hostfwd
//     still works) and one guestfwd whose target is a command QEMU spawns per
//     guest connection; that command (Relay) copies the connection to the
//     proxy.
//   - The proxy runs as its own process (RunProcess) for the VM's lifetime
//     and exits when the QEMU process is gone.
//   - The proxy resolves names itself, dials only addresses the policy allows,
//     and writes one log line per connection or request (ReadLog reads them).
//
// The package does not read the spec and has no CLI: the engine maps spec
// keys to ParsePolicy and a hidden subcommand calls RunProcess and Relay.
package egress
