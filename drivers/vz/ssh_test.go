package vz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const leaseFile = `{
	name=other
	ip_address=192.168.64.2
	hw_address=1,2:0:0:0:0:1
	identifier=1,2:0:0:0:0:1
	lease=0x70000000
}
{
	name=sbf-0123abcd-api
	ip_address=192.168.64.5
	hw_address=1,a2:b:c:d0:0:e
	identifier=1,a2:b:c:d0:0:e
	lease=0x60000000
}
{
	name=sbf-0123abcd-api
	ip_address=192.168.64.9
	hw_address=1,a2:b:c:d0:0:e
	identifier=1,a2:b:c:d0:0:e
	lease=0x65000000
}
`

func TestLeaseIPFindsTheLatestLeaseOfTheMAC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dhcpd_leases")
	os.WriteFile(path, []byte(leaseFile), 0o644)
	ip, err := leaseIP(path, "a2:0b:0c:d0:00:0e")
	if err != nil || ip != "192.168.64.9" {
		t.Errorf("leaseIP = %q, %v", ip, err)
	}
	if ip, err := leaseIP(path, "02:00:00:00:00:01"); ip != "192.168.64.2" {
		t.Errorf("leaseIP = %q, %v", ip, err)
	}
	if _, err := leaseIP(path, "02:00:00:00:00:02"); err == nil || !strings.Contains(err.Error(), "no DHCP lease yet") {
		t.Errorf("an unknown MAC: %v", err)
	}
	if _, err := leaseIP(filepath.Join(t.TempDir(), "none"), "02:00:00:00:00:01"); err == nil {
		t.Error("a missing lease file gave an address")
	}
}
