//go:build !unix

package egress

import (
	"context"
	"net"
)

// handOff is unix's; elsewhere the relay copies.
func handOff(ctx context.Context, _ int, guest net.Conn, path string) error {
	return Relay(ctx, guest, "unix:"+path)
}

// takeHandoff is unix's: descriptors travel only over unix sockets.
func (p *Proxy) takeHandoff(c net.Conn) net.Conn { return c }
