package etcdtest

import (
	"net"
	"strings"
	"testing"
)

// TestStartPicksNewPortsWhenOneIsTaken: a member whose port another
// process took between freeAddr and its bind exits, and Start starts the
// cluster again on new ports instead of failing the test (a CI run failed
// so while another test process ran beside it).
func TestStartPicksNewPortsWhenOneIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	real := freeAddr
	t.Cleanup(func() { freeAddr = real })
	calls := 0
	freeAddr = func(t testing.TB) string {
		calls++
		if calls == 1 {
			return taken.Addr().String()
		}
		return real(t)
	}
	c := Start(t, 1)
	if strings.Contains(c.Members[0].ClientURL, taken.Addr().String()) {
		t.Fatalf("member's client URL %s is the taken address", c.Members[0].ClientURL)
	}
	if calls < 4 {
		t.Fatalf("freeAddr called %d times, want a second pair of ports after the taken one", calls)
	}
}

// TestStartNeverGivesTwoMembersOnePort: the kernel handed a just-closed
// port to the next free-port probe, two members of a three-member cluster
// got one URL and etcd refused the cluster ("has duplicate url"). Start
// must ask again instead.
func TestStartNeverGivesTwoMembersOnePort(t *testing.T) {
	real := freeAddr
	t.Cleanup(func() { freeAddr = real })
	var last string
	calls := 0
	freeAddr = func(t testing.TB) string {
		calls++
		if calls%2 == 0 && last != "" {
			return last // the same port twice in a row
		}
		last = real(t)
		return last
	}
	c := Start(t, 3)
	seen := map[string]bool{}
	for _, m := range c.Members {
		for _, u := range []string{m.ClientURL, m.PeerURL} {
			if seen[u] {
				t.Fatalf("URL %s given to two places", u)
			}
			seen[u] = true
		}
	}
}
