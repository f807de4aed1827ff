package cluster

import (
	"net"
	"strconv"
	"testing"
)

// TestFixedPortAddr: every address is on loopback, bindable, and below
// the ephemeral range, so no :0 bind (a block server of the same
// `tessera up`) can be given its port before the server told it binds.
func TestFixedPortAddr(t *testing.T) {
	low := ephemeralLow()
	for range 50 {
		addr, err := FixedPortAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || n < minFixedPort || n >= low {
			t.Fatalf("FixedPortAddr gave %s: want 127.0.0.1 and a port from %d to %d", addr, minFixedPort, low-1)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FixedPortAddr gave %s, which cannot be bound: %v", addr, err)
		}
		l.Close()
	}
}
