// Command reclaimrtt measures how long the reclaimer takes to remove
// released blocks from block servers at other sites, against the pattern
// it had before its removals were batched (2026-11-27): one DELETE per
// block per server, 4 releases in flight, each asking the servers one
// after the other. Both run in the same process on the same servers:
//
//	reclaimrtt [-servers 6] [-remote 4] [-rtt 60ms] [-blocks 512]
//
// -servers disk block servers (package server over disk.Store, plain HTTP
// on loopback) of which -remote sit behind an internal/wan link of -rtt
// round trip; -blocks released blocks, each stored on every server. Each
// phase stores them, then removes them all: the reclaimer through one
// Round (its defaults, a fake meta service listing the releases), the
// emulated old pattern through Remove calls. It prints both times, their
// ratio and the requests each made, and checks that every copy is gone.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/meta"
	"tessera/internal/reclaim"
	"tessera/internal/wan"
)

func main() {
	servers := flag.Int("servers", 6, "block servers")
	remote := flag.Int("remote", 4, "of them, behind a WAN link")
	rtt := flag.Duration("rtt", 60*time.Millisecond, "round trip of the WAN links (whole milliseconds, even)")
	blocks := flag.Int("blocks", 512, "released blocks, each stored on every server")
	flag.Parse()
	if *servers < 1 || *remote < 0 || *remote > *servers || *blocks < 1 || *rtt < 0 {
		fail(errors.New("want -servers >= 1, 0 <= -remote <= -servers, -blocks >= 1, -rtt >= 0"))
	}
	dir, err := os.MkdirTemp("/var/tmp", "tessera-reclaimrtt-")
	fail(err)
	defer os.RemoveAll(dir)

	var stores []*disk.Store
	var sm meta.ServerMap
	for i := range *servers {
		st, err := disk.Open(fmt.Sprintf("%s/s%d", dir, i))
		fail(err)
		defer st.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		fail(err)
		srv := &http.Server{Handler: blockserver.New(st, blockserver.Options{})}
		go srv.Serve(ln)
		defer srv.Close()
		addr := ln.Addr().String()
		if i < *remote {
			l, err := wan.NewLink(addr, wan.LinkOptions{Latency: *rtt / 2, Name: fmt.Sprintf("s%d", i)})
			fail(err)
			defer l.Close()
			addr = l.Addr()
		}
		stores = append(stores, st)
		sm.Servers = append(sm.Servers, meta.Server{ID: fmt.Sprintf("s%d", i), Addr: addr, State: meta.StateUp})
	}
	fmt.Printf("# %d block servers, %d behind a %v RTT link; %d released blocks on each\n", *servers, *remote, *rtt, *blocks)

	ctx := context.Background()
	var requests atomic.Int64
	dial := func(s meta.Server) *counting {
		return &counting{Client: blockclient.New(s.Addr, blockclient.Options{}), n: &requests}
	}

	// Old pattern: 4 releases in flight, one DELETE per server in turn.
	rels := store(ctx, stores, *blocks)
	requests.Store(0)
	start := time.Now()
	work := make(chan meta.Release)
	var wg sync.WaitGroup
	clients := map[string]*counting{}
	for _, s := range sm.Servers {
		clients[s.ID] = dial(s)
	}
	for range 4 {
		wg.Go(func() {
			for rel := range work {
				for _, s := range sm.Servers {
					_, err := clients[s.ID].Remove(ctx, rel.Hash, rel.At)
					fail(err)
				}
			}
		})
	}
	for _, rel := range rels {
		work <- rel
	}
	close(work)
	wg.Wait()
	old, oldReqs := time.Since(start), requests.Load()
	checkGone(ctx, stores, rels)

	// The reclaimer, its defaults.
	rels = store(ctx, stores, *blocks)
	requests.Store(0)
	m := &fakeMeta{sm: sm, rels: rels}
	r := reclaim.New(reclaim.Config{
		Meta: m,
		Dial: func(s meta.Server) (reclaim.Remover, error) { return dial(s), nil },
		Now:  func() time.Time { return time.Now().Add(time.Hour) },
	})
	start = time.Now()
	rep, err := r.Round(ctx)
	fail(err)
	now, nowReqs := time.Since(start), requests.Load()
	if rep.Done != *blocks {
		fail(fmt.Errorf("reclaimer round: %+v, want %d releases done", rep, *blocks))
	}
	checkGone(ctx, stores, rels)

	fmt.Printf("old pattern (DELETE per block per server, 4 releases in flight)\t%.2f s\t%d requests\n", old.Seconds(), oldReqs)
	fmt.Printf("reclaimer (POST /v1/remove per page per server, defaults)\t%.2f s\t%d requests\n", now.Seconds(), nowReqs)
	fmt.Printf("old / reclaimer\t%.1f\n", old.Seconds()/now.Seconds())
}

// store puts n random blocks on every store and returns their releases,
// made just after.
func store(ctx context.Context, stores []*disk.Store, n int) []meta.Release {
	var rels []meta.Release
	for range n {
		data := make([]byte, 4096)
		rand.Read(data)
		h := block.Sum(data)
		for _, st := range stores {
			fail(st.Put(ctx, h, data))
		}
		rels = append(rels, meta.Release{Hash: h})
	}
	at := time.Now().Add(time.Second).UnixNano() // after every Put
	for i := range rels {
		rels[i].At = at
	}
	return rels
}

func checkGone(ctx context.Context, stores []*disk.Store, rels []meta.Release) {
	for i, st := range stores {
		for _, rel := range rels {
			has, err := st.Has(ctx, []block.Hash{rel.Hash})
			fail(err)
			if has[0] {
				fail(fmt.Errorf("store %d still holds %s", i, rel.Hash.Short()))
			}
		}
	}
}

// counting counts the requests a block client makes for removals.
type counting struct {
	*blockclient.Client
	n *atomic.Int64
}

func (c *counting) Remove(ctx context.Context, h block.Hash, notAfter int64) (bool, error) {
	c.n.Add(1)
	return c.Client.Remove(ctx, h, notAfter)
}

func (c *counting) RemoveMany(ctx context.Context, rs []block.Removal) ([]bool, error) {
	c.n.Add(int64((len(rs) + blockserver.MaxRemoveBatch - 1) / blockserver.MaxRemoveBatch))
	return c.Client.RemoveMany(ctx, rs)
}

// fakeMeta lists the releases (all due) and the servers.
type fakeMeta struct {
	sm      meta.ServerMap
	rels    []meta.Release
	dropped int
}

func (m *fakeMeta) Servers(context.Context) (meta.ServerMap, error) { return m.sm, nil }

func (m *fakeMeta) Releases(_ context.Context, after meta.Release, _ int64, limit int) ([]meta.Release, bool, error) {
	i := 0
	if after.At != 0 {
		for i < len(m.rels) && m.rels[i] != after {
			i++
		}
		i++
	}
	end := min(i+limit, len(m.rels))
	if i >= end {
		return nil, false, nil
	}
	return m.rels[i:end], end < len(m.rels), nil
}

func (m *fakeMeta) DropReleases(_ context.Context, rs []meta.Release) error {
	m.dropped += len(rs)
	return nil
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "reclaimrtt:", err)
		os.Exit(1)
	}
}
