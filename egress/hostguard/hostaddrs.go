package hostguard

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// CurrentHost lists this machine's interface addresses and the broadcast
// address of each IPv4 network on them.
func CurrentHost() (Host, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return Host{}, err
	}
	var h Host
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		h.Addrs = append(h.Addrs, ip)
		if ones, bits := n.Mask.Size(); ip.Is4() && bits == 32 && ones < 31 {
			v := binary.BigEndian.Uint32(ip.AsSlice()) | (1<<(32-ones) - 1)
			h.Addrs = append(h.Addrs, netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, v))))
		}
	}
	return h, nil
}
