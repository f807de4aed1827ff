package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/wan"
	"tessera/test/cluster"
)

// siteLag is one site of `tessera status --json`: its replication lag.
type siteLag struct {
	Name            string  `json:"name"`
	UnderReplicated int64   `json:"under_replicated"`
	UnderBytes      int64   `json:"under_bytes"`
	LagSeconds      float64 `json:"lag_seconds"`
}

// TestMultiSiteLag: `tessera status` shows a site's replication lag (issue
// 13 item 7). Site C's links are cut while site A writes files with a copy
// per site: status shows C missing those blocks, their bytes, and an age
// that grows; after healing, the mover fills C and C's lag goes to 0.
func TestMultiSiteLag(t *testing.T) {
	needBinary(t)
	s := cluster.StartSites(t, cluster.SitesOptions{
		Bin: suite.bin, EtcdBin: etcdtest.Binary(t), Dir: t.TempDir(), RTT: sitesRTT,
		MetaArgs:  []string{"--block-size", itoa(consistencyBlockSize), "--replicas", "2", "--mover-interval", "1s"},
		MountArgs: []string{"--meta-timeout", "20s"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if res, err := s.Run(ctx, siteA, "status"); err == nil {
				t.Logf("status at A:\n%s%s", res.Stdout, res.Stderr)
			}
			p := filepath.Join(os.TempDir(), "tessera-"+sanitize(t.Name())+".log")
			if err := os.WriteFile(p, []byte(s.LogSince(0)), 0o644); err == nil {
				t.Logf("whole sites output: %s", p)
			}
		}
	})
	at := siteDir(t, s, "lag", "session")

	// C's block servers out of reach (its links refuse; the etcd members
	// stay connected, so the metadata store keeps its leader).
	must(t, s.Mesh().Partition(siteC, wan.Refuse))
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = s.Mesh().Heal(siteC)
		}
	})
	const size = 256 << 10
	files := map[string][]byte{}
	for k := range 4 {
		data := make([]byte, size)
		rand.Read(data)
		name := fmt.Sprintf("f-%d", k)
		writeFileSync(t, filepath.Join(at[siteA], name), data)
		files[name] = data
	}

	// The mover's rounds see C short, then older (bounded).
	var c siteLag
	first := -1.0
	for range 120 {
		c = statusSite(t, s, "siteC")
		if c.UnderReplicated > 0 && first < 0 {
			first = c.LagSeconds
		}
		if c.UnderReplicated > 0 && c.LagSeconds > first {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("site C while cut off: %+v", c)
	if c.UnderReplicated == 0 || c.UnderBytes < 4*size || c.LagSeconds <= first {
		t.Fatalf("status of site C while cut off: %+v; want the blocks written (%d bytes) missing, with an age that grows from %v",
			c, 4*size, first)
	}
	if a := statusSite(t, s, "siteA"); a.UnderReplicated != 0 || a.LagSeconds != 0 {
		t.Errorf("site A, which holds every copy, shows a lag: %+v", a)
	}

	must(t, s.Mesh().Heal(siteC))
	healed = true
	for range 180 {
		if c = statusSite(t, s, "siteC"); c.UnderReplicated == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	if c.UnderReplicated != 0 || c.UnderBytes != 0 || c.LagSeconds != 0 {
		t.Fatalf("status of site C after healing: %+v; want no lag", c)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(at[siteC], name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s read at C after healing: %d bytes, %v; want the %d written at A", name, len(got), err, len(want))
		}
	}
}

// statusSite returns site name's line of `tessera status --json` at site
// A (the zero siteLag, with its name, when the site is not listed).
func statusSite(t *testing.T, s *cluster.Sites, name string) siteLag {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Run(ctx, siteA, "status", "--json")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("status --json: exit %d, %v: %s", res.ExitCode, err, res.Stderr)
	}
	var js struct {
		Sites []siteLag `json:"sites"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, res.Stdout)
	}
	for _, l := range js.Sites {
		if l.Name == name {
			return l
		}
	}
	return siteLag{Name: name}
}
