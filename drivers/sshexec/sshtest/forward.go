package sshtest

import (
	"io"
	"net"
	"strconv"

	"golang.org/x/crypto/ssh"
)

// directTCPIP serves a direct-tcpip channel (what `ssh -L` opens) as
// sshd does: it connects to the address asked for, refusing the channel
// when nothing listens there.
func directTCPIP(nch ssh.NewChannel) {
	var req struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	if err := ssh.Unmarshal(nch.ExtraData(), &req); err != nil {
		nch.Reject(ssh.Prohibited, "bad request")
		return
	}
	relay(nch, "tcp", net.JoinHostPort(req.Host, strconv.Itoa(int(req.Port))))
}

// directStreamLocal serves a direct-streamlocal channel (`ssh -L` to a
// unix socket) as sshd does.
func directStreamLocal(nch ssh.NewChannel) {
	var req struct {
		Path      string
		Reserved0 string
		Reserved1 uint32
	}
	if err := ssh.Unmarshal(nch.ExtraData(), &req); err != nil {
		nch.Reject(ssh.Prohibited, "bad request")
		return
	}
	relay(nch, "unix", req.Path)
}

// relay connects to addr and carries the channel's bytes both ways.
func relay(nch ssh.NewChannel, network, addr string) {
	c, err := net.Dial(network, addr)
	if err != nil {
		nch.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nch.Accept()
	if err != nil {
		c.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	done := make(chan struct{}, 2)
	go func() { io.Copy(ch, c); ch.CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, ch); c.(interface{ CloseWrite() error }).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
	ch.Close()
	c.Close()
}
