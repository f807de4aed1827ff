package e2e

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tessera/internal/cachetier/memcache/mctest"
)

// TestClusterMemcachedTier runs two real memcached processes and mounts
// with --cache-tier memcached://a,b. A file of 32 blocks of 1 MiB, written
// through a mount without the tier, is read from three fresh mounts in
// turn (cold kernel and client caches each time):
//
//  1. the first fills the tier: memcached sees sets, and both servers hold
//     items (32 block hashes all on one of two servers: p = 2⁻³¹);
//  2. the second is served by the tier: get_hits grows by at least one per
//     block and memcached sends at least the file's size (bytes_written);
//  3. the third reads while one memcached is killed (SIGKILL, by PID)
//     after a third of the file: no error, right bytes. A fourth mount,
//     started with one pool member dead, reads without error as well.
//
// Skipped when memcached is missing unless TESSERA_REQUIRE_MEMCACHED is set.
func TestClusterMemcachedTier(t *testing.T) {
	needBinary(t)
	mcs := []*mctest.Server{mctest.Start(t, mctest.Options{}), mctest.Start(t, mctest.Options{})}
	tier := "memcached://" + mcs[0].Addr + "," + mcs[1].Addr
	m := startMulti(t, 3, "--replicas", "2", "--block-size", itoa(mib))
	const blocks = 32
	s := newStream(5, blocks*mib)

	w := addMount(t, m) // no tier: the reads below are the first to see it
	must(t, writeStream(filepath.Join(w.Mount(), "f"), s, 0, nil))
	must(t, w.Stop())

	s0 := mcStatsSum(t, mcs[0].Addr, mcs[1].Addr)
	r1 := addMount(t, m, "--cache-tier", tier)
	must(t, checkStream(filepath.Join(r1.Mount(), "f"), s, nil))
	must(t, r1.Stop())
	s1 := mcStatsSum(t, mcs[0].Addr, mcs[1].Addr)
	t.Logf("first read: %s", s1.delta(s0))
	if d := s1["cmd_set"] - s0["cmd_set"]; d < blocks {
		t.Errorf("first read through the tier: memcached got %d sets, want at least %d (one per block missed)", d, blocks)
	}
	for _, mc := range mcs {
		if n := mcStats(t, mc.Addr)["curr_items"]; n == 0 {
			t.Errorf("memcached %s holds no item after 32 blocks were read through the pool", mc.Addr)
		}
	}

	r2 := addMount(t, m, "--cache-tier", tier)
	must(t, checkStream(filepath.Join(r2.Mount(), "f"), s, nil))
	must(t, r2.Stop())
	s2 := mcStatsSum(t, mcs[0].Addr, mcs[1].Addr)
	t.Logf("second read: %s", s2.delta(s1))
	if d := s2["get_hits"] - s1["get_hits"]; d < blocks {
		t.Errorf("second read from a fresh mount: %d memcached get_hits, want at least %d (one per block)", d, blocks)
	}
	if d := s2["bytes_written"] - s1["bytes_written"]; d < s.size {
		t.Errorf("second read from a fresh mount: memcached sent %d bytes, want at least the file's %d", d, s.size)
	}

	live := mcStats(t, mcs[1].Addr)
	r3 := addMount(t, m, "--cache-tier", tier)
	killAt := s.size / 3 / mib * mib
	start := time.Now()
	err := checkStream(filepath.Join(r3.Mount(), "f"), s, func(off int64) {
		if off == killAt {
			mcs[0].Kill()
		}
	})
	if err != nil {
		t.Fatalf("read while memcached %s was killed: %v", mcs[0].Addr, err)
	}
	t.Logf("read with a memcached killed after %d MiB: %v", killAt/mib, time.Since(start).Round(time.Millisecond))

	r4 := addMount(t, m, "--cache-tier", tier)
	start = time.Now()
	if err := checkStream(filepath.Join(r4.Mount(), "f"), s, nil); err != nil {
		t.Fatalf("read from a mount started with memcached %s dead: %v", mcs[0].Addr, err)
	}
	t.Logf("read from a mount started with one memcached dead: %v; live memcached: %s",
		time.Since(start).Round(time.Millisecond), mcStats(t, mcs[1].Addr).delta(live))
}

// mcCounters are numeric memcached stats.
type mcCounters map[string]int64

var mcWatched = []string{"get_hits", "get_misses", "cmd_set", "bytes_written", "curr_items"}

func (c mcCounters) delta(old mcCounters) string {
	var b strings.Builder
	for _, k := range mcWatched {
		fmt.Fprintf(&b, "%s +%d ", k, c[k]-old[k])
	}
	return b.String()
}

// mcStats reads memcached's own counters through its text protocol.
func mcStats(t testing.TB, addr string) mcCounters {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	must(t, err)
	defer conn.Close()
	must(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Write([]byte("stats\r\n"))
	must(t, err)
	out := mcCounters{}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "END" {
			return out
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "STAT" {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				out[f[1]] = n
			}
		}
	}
	t.Fatalf("memcached %s stats: no END: %v", addr, sc.Err())
	return nil
}

// mcStatsSum adds the counters of several memcached servers.
func mcStatsSum(t testing.TB, addrs ...string) mcCounters {
	t.Helper()
	sum := mcCounters{}
	for _, a := range addrs {
		for k, v := range mcStats(t, a) {
			sum[k] += v
		}
	}
	return sum
}
