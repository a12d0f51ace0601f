package vz

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// sshTarget is a running instance's sshd: its address on the NAT network
// (from macOS's DHCP leases, by the instance's MAC), its user and key.
func (d *Driver) sshTarget(ctx context.Context, instance string) (sshexec.Target, error) {
	f := d.folder(instance)
	c, err := f.ReadConfig()
	if err != nil {
		return sshexec.Target{}, err
	}
	if st, err := d.status(ctx, f); err != nil || !st.Up() {
		return sshexec.Target{}, fmt.Errorf("vz instance %s is not running", instance)
	}
	ip, err := leaseIP(d.opts.Leases, c.MAC)
	if err != nil {
		return sshexec.Target{}, fmt.Errorf("finding the address of %s: %w", instance, err)
	}
	key := f.Path(layout.KeyFile)
	return sshexec.Target{Host: ip, Port: d.opts.SSHPort, User: c.User, IdentityFiles: []string{key}}, nil
}

// leaseIP finds the address macOS's DHCP server (bootpd, behind the NAT
// network) gave the MAC: the lease file is a list of blocks such as
//
//	{
//		name=sbf-0123abcd-api
//		ip_address=192.168.64.7
//		hw_address=1,2:a:3b:4c:5d:6e
//		lease=0x65f0a1b2
//	}
//
// with hw_address octets unpadded. The latest lease for the MAC wins.
func leaseIP(path, mac string) (string, error) {
	want, err := net.ParseMAC(mac)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the DHCP leases: %w", err)
	}
	defer f.Close()
	var best string
	var bestLease int64 = -1
	entry := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "{":
			entry = map[string]string{}
		case line == "}":
			lease, _ := strconv.ParseInt(strings.TrimPrefix(entry["lease"], "0x"), 16, 64)
			if sameMAC(entry["hw_address"], want) && entry["ip_address"] != "" && lease > bestLease {
				best, bestLease = entry["ip_address"], lease
			}
		default:
			if k, v, ok := strings.Cut(line, "="); ok {
				entry[k] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading the DHCP leases: %w", err)
	}
	if best == "" {
		return "", errors.New("no DHCP lease yet for " + want.String() + " in " + path)
	}
	return best, nil
}

// sameMAC compares a lease's hw_address ("1,2:a:3b:4c:5d:6e": a hardware
// type, then octets without leading zeros) with a MAC.
func sameMAC(hw string, mac net.HardwareAddr) bool {
	_, octets, ok := strings.Cut(hw, ",")
	if !ok {
		octets = hw
	}
	parts := strings.Split(octets, ":")
	if len(parts) != len(mac) {
		return false
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil || byte(v) != mac[i] {
			return false
		}
	}
	return true
}
