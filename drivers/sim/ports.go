package sim

import (
	"context"
	"net"
	"strconv"
)

// DialGuest connects to a port of the instance's "guest". The sim's
// guest processes are this host's processes on this host's network, so
// a guest port is a port of this host's loopback: that is what a VM's
// forward reaches over SSH, without the VM.
func (d *Driver) DialGuest(ctx context.Context, instance string, port int) (net.Conn, error) {
	if err := d.running(instance); err != nil {
		return nil, err
	}
	var dialer net.Dialer
	return dialer.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}
