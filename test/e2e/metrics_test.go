package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/metrics/metricstest"
	"tessera/test/cluster"
)

// Issue 12, item 5: every role serves Prometheus metrics with --metrics,
// and the series move when work is done through the mount.

// scrapeAt scrapes http://addr/metrics (parsed by the Prometheus text
// parser; a series it rejects fails the test).
func scrapeAt(t *testing.T, addr string) metricstest.Families {
	t.Helper()
	if addr == "" {
		t.Fatal("no metrics=ADDR in the ready line")
	}
	f, err := metricstest.Scrape(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// grew checks that series name (summed over the series with labels) grew
// by at least least between before and after.
func grew(t *testing.T, before, after metricstest.Families, least float64, name string, labels ...string) {
	t.Helper()
	b, _ := before.Value(name, labels...)
	a, ok := after.Value(name, labels...)
	if !ok {
		t.Errorf("no series %s%v", name, labels)
		return
	}
	if a-b < least {
		t.Errorf("%s%v grew by %v (from %v to %v), want >= %v", name, labels, a-b, b, a, least)
	}
}

// writeAndRead writes size bytes to a new file under dir, fsyncs it, and
// reads them back.
func writeAndRead(t *testing.T, dir string, size int) {
	t.Helper()
	data := bytes.Repeat([]byte("metrics moves! "), size/15+1)[:size]
	p := filepath.Join(dir, "metrics-file")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v; want the %d written", len(got), err, size)
	}
}

// TestMetricsUp: `tessera up --metrics 127.0.0.1:0` serves every role's
// series on one listener; a write through the mount moves the FUSE bytes
// and requests, the client's block bytes and commits, the meta service's
// commit count, and the block servers' stored bytes.
func TestMetricsUp(t *testing.T) {
	c := startCluster(t, withBlockServers(2), func(o *cluster.Options) {
		o.Args = append(o.Args, "--metrics", "127.0.0.1:0", "--block-size", "1048576")
	})
	addr := c.Field("metrics")
	before := scrapeAt(t, addr)
	const size = 3 << 20
	writeAndRead(t, c.Mount(), size)
	after := scrapeAt(t, addr)

	grew(t, before, after, size, "tessera_fuse_written_bytes_total")
	grew(t, before, after, 1, "tessera_fuse_requests_total", "op", "write", "result", "ok")
	grew(t, before, after, 1, "tessera_fuse_requests_total", "op", "fsync", "result", "ok")
	grew(t, before, after, size, "tessera_client_block_sent_bytes_total")
	grew(t, before, after, 1, "tessera_client_commits_total")
	grew(t, before, after, 1, "tessera_client_meta_requests_total", "op", "commit", "result", "ok")
	grew(t, before, after, 1, "tessera_meta_requests_total", "op", "commit", "result", "ok")
	grew(t, before, after, size, "tessera_blockd_stored_bytes") // both servers summed
	for _, id := range []string{"b0", "b1"} {
		if _, ok := after.Value("tessera_blockd_filesystem_free_ratio", "server", id); !ok {
			t.Errorf("no free-space series of block server %s", id)
		}
	}
	if v, _ := after.Value("tessera_meta_sessions"); v != 1 {
		t.Errorf("tessera_meta_sessions = %v with one mount, want 1", v)
	}
	if v, _ := after.Value("tessera_meta_block_servers", "state", "up"); v != 2 {
		t.Errorf("tessera_meta_block_servers{state=up} = %v, want 2", v)
	}
}

// TestMetricsRoles: `tessera meta`, `tessera blockd` and `tessera mount`
// each serve their own series with --metrics; a write through the mount
// moves the mount's bytes, the block servers' bytes received over HTTP and
// the meta service's commits.
func TestMetricsRoles(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{
		BlockServers: 2,
		MetaArgs:     []string{"--metrics", "127.0.0.1:0", "--replicas", "1", "--mover-interval", "200ms"},
		ServerArgs: func(int) []string {
			return []string{"--metrics", "127.0.0.1:0", "--scrub-rate", "-1", "--scrub-interval", "200ms"}
		},
	})
	mnt := addMount(t, m, "--metrics", "127.0.0.1:0")
	scrapeAll := func() (meta, mount metricstest.Families, servers []metricstest.Families) {
		meta = scrapeAt(t, m.Meta().Field("metrics"))
		mount = scrapeAt(t, mnt.Field("metrics"))
		for _, s := range m.Servers() {
			servers = append(servers, scrapeAt(t, s.Field("metrics")))
		}
		return meta, mount, servers
	}
	meta0, mount0, servers0 := scrapeAll()
	const size = 4 << 20
	writeAndRead(t, mnt.Mount(), size)
	meta1, mount1, servers1 := scrapeAll()

	grew(t, mount0, mount1, size, "tessera_fuse_written_bytes_total")
	grew(t, mount0, mount1, size, "tessera_client_block_sent_bytes_total")
	grew(t, mount0, mount1, 1, "tessera_client_meta_requests_total", "op", "commit", "result", "ok")
	grew(t, meta0, meta1, 1, "tessera_meta_requests_total", "op", "commit", "result", "ok")
	var recv0, recv1, puts float64
	for i := range servers1 {
		a, _ := servers0[i].Value("tessera_blockd_received_bytes_total")
		b, _ := servers1[i].Value("tessera_blockd_received_bytes_total")
		p0, _ := servers0[i].Value("tessera_blockd_requests_total", "route", "PUT /v1/blocks/{hex}", "code", "2xx")
		p1, _ := servers1[i].Value("tessera_blockd_requests_total", "route", "PUT /v1/blocks/{hex}", "code", "2xx")
		recv0, recv1, puts = recv0+a, recv1+b, puts+p1-p0
	}
	if recv1-recv0 < size || puts < 1 {
		t.Errorf("block servers received %v bytes in %v PUTs over HTTP, want >= %d bytes", recv1-recv0, puts, size)
	}
	if v, _ := meta1.Value("tessera_meta_sessions"); v != 1 {
		t.Errorf("tessera_meta_sessions = %v with one mount, want 1", v)
	}

	// The mover's and the scrub's progress: later rounds see the blocks
	// written (a bounded poll; only a hang reaches the bound).
	deadline := time.Now().Add(time.Minute)
	for {
		meta2, _, servers2 := scrapeAll()
		rounds0, _ := meta0.Value("tessera_mover_rounds_total")
		rounds2, _ := meta2.Value("tessera_mover_rounds_total")
		blocks, _ := meta2.Value("tessera_mover_blocks")
		var scrubbed, scrubRounds float64
		for i, f := range servers2 {
			b, _ := f.Value("tessera_scrub_round_bytes")
			r0, _ := servers0[i].Value("tessera_scrub_rounds_total")
			r2, _ := f.Value("tessera_scrub_rounds_total")
			scrubbed, scrubRounds = scrubbed+b, scrubRounds+r2-r0
		}
		if rounds2 > rounds0 && blocks >= 1 && scrubRounds >= 2 && scrubbed >= size {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: mover rounds %v -> %v seeing %v blocks; scrub rounds +%v verifying %v bytes (want >= %d)",
				rounds0, rounds2, blocks, scrubRounds, scrubbed, size)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
