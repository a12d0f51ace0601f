// Package hostguard keeps a QEMU guest from reaching services on the host
// whatever its egress mode, unless the operator's policy names the port
// ([policy] guest_host_ports).
//
// QEMU's user network (libslirp) turns every guest connection into a
// connect or sendto of the QEMU process, and maps the gateway alias
// (192.168.5.2 under Lima) to the host's 127.0.0.1: without a guard, a
// guest reaches every loopback service of the host (an MCP server, a
// database, a development server) and every address of the host's
// interfaces. QEMU has no option to turn that off, and in egress = "allow"
// slirp's restrict=on cannot be used (it would take the whole network).
//
// So sbf runs QEMU under a seccomp filter (Linux) that hands each connect,
// sendto with an address, sendmsg and sendmmsg to a supervisor process
// (SECCOMP_RET_USER_NOTIF). The supervisor reads the call's socket address
// from QEMU's memory and refuses loopback, unspecified, broadcast,
// multicast and every address of this host's interfaces, except the
// operator's ports, DNS to the resolvers of /etc/resolv.conf (slirp's DNS
// alias forwards there) and the egress proxy's own address; anything else,
// AF_UNIX included (the guestfwd relays reach the proxy's socket), continues
// as QEMU asked (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
//
// Why continuing is sound here: the kernel reads the address again after
// the supervisor's answer, so a process that rewrote it in between would
// win. QEMU is not the adversary; the guest is, and the guest cannot write
// the memory slirp builds socket addresses in (slirp copies packet fields
// out of guest RAM into its own socket structures and stack before it
// calls connect or sendto). What the guest controls is which address slirp
// asks for, and that is what is judged.
//
// Failing closed: the filter is installed on the thread that then execs
// QEMU, with no_new_privs, so QEMU, its threads and every process it starts
// (the relays) carry it and cannot remove it. If the supervisor dies, the
// kernel fails every filtered call with ENOSYS; if it cannot read a call's
// address, the call is refused.
package hostguard
