package wan

import (
	"net"
	"testing"
	"time"
)

// TestMesh builds issue 13's three sites (60, 60 and 120 ms round trips),
// exposes an echo service in each site and checks that every site reaches
// every other one no faster than its pair's RTT, that a partitioned site is
// unreachable both ways while the two others still talk, and that a heal
// brings it back.
func TestMesh(t *testing.T) {
	ms := time.Millisecond
	m, err := NewMesh(MeshOptions{RTT: [][]time.Duration{
		{0, 60 * ms, 120 * ms},
		{60 * ms, 0, 60 * ms},
		{120 * ms, 60 * ms, 0},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	addrs := make([][]string, 3) // addrs[j][i]: how site i reaches site j's echo
	for j := range addrs {
		if addrs[j], err = m.Expose(j, server(t, echo)); err != nil {
			t.Fatal(err)
		}
	}
	for j := 0; j < 3; j++ {
		for i := 0; i < 3; i++ {
			rtt := roundTrip(t, dial(t, addrs[j][i]))
			want := m.rtt[i][j]
			if rtt < want {
				t.Errorf("site %d to site %d: round trip %v, want at least %v", i, j, rtt, want)
			}
			if i != j && len(m.Links(i, j)) != 1 {
				t.Errorf("Links(%d, %d): %d links, want 1", i, j, len(m.Links(i, j)))
			}
		}
	}

	if err := m.Partition(2, Refuse); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{addrs[2][0], addrs[2][1], addrs[0][2], addrs[1][2]} {
		if c, err := net.DialTimeout("tcp", a, hang); err == nil {
			c.Close()
			t.Errorf("dial %s across the partition succeeded", a)
		}
	}
	roundTrip(t, dial(t, addrs[1][0]))
	roundTrip(t, dial(t, addrs[0][1]))
	if err := m.Heal(2); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, dial(t, addrs[2][0]))
	roundTrip(t, dial(t, addrs[0][2]))
}

func TestMeshRefusesBadMatrix(t *testing.T) {
	ms := time.Millisecond
	for _, rtt := range [][][]time.Duration{
		{{0}},
		{{0, 1 * ms}, {2 * ms, 0}},
		{{1 * ms, 1 * ms}, {1 * ms, 0}},
		{{0, 1 * ms}, {1 * ms}},
	} {
		if _, err := NewMesh(MeshOptions{RTT: rtt}); err == nil {
			t.Errorf("NewMesh(%v): no error", rtt)
		}
	}
}
