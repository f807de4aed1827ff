package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/mover"
	"tessera/internal/placement"
	"tessera/internal/wan"
)

// siteServer is a real block server (disk store, HTTP on loopback) that
// can be cut off (its listener closed: connections are refused) and
// brought back on the same address.
type siteServer struct {
	id, site, addr string
	st             *disk.Store
	mu             sync.Mutex
	srv            *http.Server
	gets, puts     atomic.Int64 // requests this test's clients made
}

func (s *siteServer) start(t *testing.T) {
	t.Helper()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: blockserver.New(s.st, blockserver.Options{})}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go srv.Serve(ln)
}

func (s *siteServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

func (s *siteServer) holds(h block.Hash) bool {
	ok, err := s.st.Has(context.Background(), []block.Hash{h})
	return err == nil && ok[0]
}

// siteCountingStore counts a client's requests to one server.
type siteCountingStore struct {
	block.Store
	s *siteServer
}

func (c siteCountingStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	c.s.gets.Add(1)
	return c.Store.Get(ctx, h)
}

func (c siteCountingStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	c.s.puts.Add(1)
	return c.Store.Put(ctx, h, data)
}

// sitesEnv is a meta service and block servers in three sites a, b, c
// (two hosts of one server each per site).
type sitesEnv struct {
	t       *testing.T
	ctx     context.Context
	svc     *meta.Service
	servers map[string]*siteServer
}

func newSitesEnv(t *testing.T) *sitesEnv {
	t.Helper()
	e := &sitesEnv{t: t, ctx: context.Background(), servers: map[string]*siteServer{}}
	var err error
	e.svc, err = meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, site := range []string{"a", "b", "c"} {
		for i := range 2 {
			s := &siteServer{id: fmt.Sprintf("%s%d", site, i), site: site}
			if s.st, err = disk.Open(t.TempDir()); err != nil {
				t.Fatal(err)
			}
			s.start(t)
			t.Cleanup(func() { s.stop(); s.st.Close() })
			e.servers[s.id] = s
			if _, err := e.svc.RegisterServer(e.ctx, meta.Server{ID: s.id, Addr: s.addr, Site: site,
				Host: s.id + "-host", State: meta.StateUp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

func (e *sitesEnv) dial(s meta.Server) (block.Store, error) {
	return siteCountingStore{blockclient.New(s.Addr, blockclient.Options{Tries: 2}), e.servers[s.ID]}, nil
}

// client returns a client at site (closed when the test ends).
func (e *sitesEnv) client(site string) *Client {
	e.t.Helper()
	c, err := New(e.ctx, Config{Meta: e.svc, Dial: e.dial, Site: site, Logger: slog.New(slog.DiscardHandler),
		MemCacheBytes: 64 << 10})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// file creates a file with replication spec spec.
func (e *sitesEnv) file(name, spec string) meta.Inode {
	e.t.Helper()
	in, err := e.svc.Create(e.ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.SetXattr(e.ctx, in.Ino, meta.ReplicasXattr, []byte(spec), 0); err != nil {
		e.t.Fatal(err)
	}
	in, err = e.svc.GetAttr(e.ctx, in.Ino)
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

func (e *sitesEnv) site(site string, f func(s *siteServer)) {
	for _, s := range e.servers {
		if s.site == site {
			f(s)
		}
	}
}

// blocks returns the file's committed block hashes.
func (e *sitesEnv) blocks(ino meta.Ino) []block.Hash {
	e.t.Helper()
	r, err := e.svc.GetRecipe(e.ctx, ino, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Blocks
}

// copiesBySite counts h's copies per site.
func (e *sitesEnv) copiesBySite(h block.Hash) map[string]int {
	n := map[string]int{}
	for _, s := range e.servers {
		if s.holds(h) {
			n[s.site]++
		}
	}
	return n
}

func writeClose(ctx context.Context, c *Client, in meta.Inode, data []byte) error {
	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		return err
	}
	if _, err := h.Write(ctx, 0, data); err != nil {
		h.Release(ctx)
		return err
	}
	return h.Release(ctx)
}

// TestSiteMajorityCommit: with replicas a:2,b:1,c:1 and site a cut off, a
// write commits on the copies in b and c (two of three sites; two of four
// copies, which a majority of copies would refuse), and the site's copies
// arrive later through the mover once it is back.
func TestSiteMajorityCommit(t *testing.T) {
	e := newSitesEnv(t)
	e.site("a", (*siteServer).stop)
	in := e.file("f", "a:2,b:1,c:1")
	data := make([]byte, 6*64<<10)
	rand.New(rand.NewSource(13)).Read(data)
	c := e.client("b")
	if err := writeClose(e.ctx, c, in, data); err != nil {
		t.Fatalf("write with site a cut off: %v", err)
	}
	hashes := e.blocks(in.Ino)
	if len(hashes) != 6 {
		t.Fatalf("%d blocks committed, want 6", len(hashes))
	}
	for i, h := range hashes {
		if n := e.copiesBySite(h); n["a"] != 0 || n["b"] != 1 || n["c"] != 1 {
			t.Fatalf("block %d: copies by site %v, want b:1 c:1", i, n)
		}
	}
	// Site a is back (after the writer's copies to it all failed: Close
	// waits for them); the mover restores its copies.
	c.Close(e.ctx)
	e.site("a", func(s *siteServer) { s.start(t) })
	mv := mover.New(mover.Config{Meta: e.svc, Rate: -1, Logger: slog.New(slog.DiscardHandler),
		Dial: func(s meta.Server) (mover.BlockServer, error) {
			return blockclient.New(s.Addr, blockclient.Options{}), nil
		}})
	p, err := mv.Round(e.ctx)
	if err != nil {
		t.Fatalf("mover round: %v", err)
	}
	if p.UnderReplicated != 0 || len(p.UnderBySite) != 0 || p.BytesMoved != int64(len(data))*2 {
		t.Fatalf("mover: %+v; want the 12 copies of site a moved and nothing under-replicated", p)
	}
	for i, h := range hashes {
		if n := e.copiesBySite(h); n["a"] != 2 || n["b"] != 1 || n["c"] != 1 {
			t.Fatalf("after the mover, block %d: copies by site %v, want a:2 b:1 c:1", i, n)
		}
	}
	// Read back at site a: only a's servers answer.
	for _, s := range e.servers {
		s.gets.Store(0)
	}
	r := e.client("a")
	got := make([]byte, len(data))
	in, _ = e.svc.GetAttr(e.ctx, in.Ino)
	rh, _, err := r.Open(e.ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Release(e.ctx)
	if n, err := rh.Read(e.ctx, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read at site a: %d bytes, %v", n, err)
	}
	for _, s := range e.servers {
		if n := s.gets.Load(); s.site != "a" && n != 0 {
			t.Errorf("server %s of site %s served %d reads of a client at site a", s.id, s.site, n)
		}
	}
}

// TestSiteMinorityRefused: with two of three sites cut off, a write is not
// acknowledged: its commit fails with an error naming the sites it lacked,
// and the file stays as it was.
func TestSiteMinorityRefused(t *testing.T) {
	e := newSitesEnv(t)
	e.site("b", (*siteServer).stop)
	e.site("c", (*siteServer).stop)
	in := e.file("f", "a:1,b:1,c:1")
	c := e.client("a")
	data := make([]byte, 2*64<<10)
	rand.New(rand.NewSource(14)).Read(data)
	err := writeClose(e.ctx, c, in, data)
	if err == nil {
		t.Fatal("write acknowledged with only site a of a:1,b:1,c:1 reachable")
	}
	if after, err := e.svc.GetAttr(e.ctx, in.Ino); err != nil || after.Size != 0 {
		t.Fatalf("file after the refused write: size %d, %v", after.Size, err)
	}
}

// TestSiteMajorityPut checks the router's answer directly: a put of
// a:1,b:1,c:1 with site c cut off answers once a and b hold the block and
// reports the missing copy when all were tried; with b and c cut off it
// fails with an error that says the majority is out of reach.
func TestSiteMajorityPut(t *testing.T) {
	e := newSitesEnv(t)
	c := e.client("a")
	spec, _ := placement.ParseSpec("a:1,b:1,c:1")
	e.site("c", (*siteServer).stop)
	data := []byte("one block for three sites")
	h := block.Sum(data)
	rep, err := c.router.put(e.ctx, h, data, spec)
	if err != nil {
		t.Fatalf("put with site c cut off: %v", err)
	}
	if n := e.copiesBySite(h); n["a"] != 1 || n["b"] != 1 {
		t.Fatalf("acknowledged with copies %v, want a and b", n)
	}
	<-rep.done
	if rep.err == nil || !strings.Contains(rep.err.Error(), "2 of 3 copies") {
		t.Fatalf("replication error %v, want 2 of 3 copies", rep.err)
	}
	e.site("b", (*siteServer).stop)
	data2 := []byte("another block")
	rep, err = c.router.put(e.ctx, block.Sum(data2), data2, spec)
	if err == nil || !errors.Is(err, block.ErrUnavailable) || !strings.Contains(err.Error(), "majority of the sites of replicas a:1,b:1,c:1") {
		t.Fatalf("put with b and c cut off: %v; want the majority out of reach", err)
	}
	<-rep.done
}

// TestReadsStayInSite: a file replicated to every site, read by a client
// of site c, is read from site c's servers only.
func TestReadsStayInSite(t *testing.T) {
	e := newSitesEnv(t)
	in := e.file("f", "a:1,b:1,c:1")
	data := make([]byte, 16*64<<10)
	rand.New(rand.NewSource(15)).Read(data)
	// fsync: every site's copy is stored before the read (a close returns
	// once a majority of sites holds the blocks, and site c's copies may
	// still be on their way: the reader would rightly go elsewhere).
	w := e.client("a")
	wh, _, err := w.Open(e.ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wh.Write(e.ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := wh.Fsync(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := wh.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range e.servers {
		s.gets.Store(0)
	}
	r := e.client("c")
	in, _ = e.svc.GetAttr(e.ctx, in.Ino)
	rh, _, err := r.Open(e.ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Release(e.ctx)
	got := make([]byte, len(data))
	if n, err := rh.Read(e.ctx, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read at site c: %d bytes, %v", n, err)
	}
	var inC int64
	for _, s := range e.servers {
		n := s.gets.Load()
		if s.site != "c" && n != 0 {
			t.Errorf("server %s of site %s served %d reads of a client at site c", s.id, s.site, n)
		}
		if s.site == "c" {
			inC += n
		}
	}
	if inC < 16 {
		t.Fatalf("site c's servers served %d reads, want at least the 16 blocks", inC)
	}
}

// wanSites is sitesEnv's servers behind an emulated WAN (internal/wan): a
// client of site i reaches a server of site j through the Link of their
// pair, a server of its own site directly.
type wanSites struct {
	*sitesEnv
	mesh  *wan.Mesh
	addrs map[string][]string // server id -> the address each site dials
}

var siteIndex = map[string]int{"a": 0, "b": 1, "c": 2}

func newWANSites(t *testing.T, rtt time.Duration) *wanSites {
	t.Helper()
	e := newSitesEnv(t)
	mesh, err := wan.NewMesh(wan.MeshOptions{RTT: [][]time.Duration{{0, rtt, rtt}, {rtt, 0, 2 * rtt}, {rtt, 2 * rtt, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mesh.Close() })
	w := &wanSites{sitesEnv: e, mesh: mesh, addrs: map[string][]string{}}
	for id, s := range e.servers {
		if w.addrs[id], err = mesh.Expose(siteIndex[s.site], s.addr); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// client returns a client at site whose block traffic crosses the WAN.
func (w *wanSites) client(site string) *Client {
	w.t.Helper()
	i := siteIndex[site]
	dial := func(s meta.Server) (block.Store, error) {
		return siteCountingStore{blockclient.New(w.addrs[s.ID][i], blockclient.Options{Tries: 2}), w.servers[s.ID]}, nil
	}
	c, err := New(w.ctx, Config{Meta: w.svc, Dial: dial, Site: site, Logger: slog.New(slog.DiscardHandler), MemCacheBytes: 64 << 10})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// wanBytes is what crossed the links out of site from into the other
// sites, both ways.
func (w *wanSites) wanBytes(from string) int64 {
	var n int64
	for _, to := range []string{"a", "b", "c"} {
		if to == from {
			continue
		}
		for _, l := range w.mesh.Links(siteIndex[from], siteIndex[to]) {
			n += l.BytesUp() + l.BytesDown()
		}
	}
	return n
}

// TestSitesOverWAN: three sites behind an emulated WAN; site c is cut off
// silently (its links hold every byte: a blackhole) while site a writes a
// file replicated a:1,b:1,c:1. The write and its commit complete on sites
// a and b without an answer from c. After the heal the mover gives site c
// its copies, and a client at site c reads the file with no byte crossing a
// WAN link.
func TestSitesOverWAN(t *testing.T) {
	w := newWANSites(t, 20*time.Millisecond)
	in := w.file("f", "a:1,b:1,c:1")
	data := make([]byte, 8*64<<10)
	rand.New(rand.NewSource(17)).Read(data)
	writer := w.client("a")
	if err := w.mesh.Partition(siteIndex["c"], wan.Blackhole); err != nil {
		t.Fatal(err)
	}
	if err := writeClose(w.ctx, writer, in, data); err != nil {
		t.Fatalf("write with site c cut off: %v", err)
	}
	hashes := w.blocks(in.Ino)
	for i, h := range hashes {
		if n := w.copiesBySite(h); n["a"] != 1 || n["b"] != 1 || n["c"] != 0 {
			t.Fatalf("block %d committed with copies %v, want a:1 b:1 and none in the cut-off c", i, n)
		}
	}
	if err := w.mesh.Heal(siteIndex["c"]); err != nil {
		t.Fatal(err)
	}
	// The writer's copies to c end (delivered late, or timed out);
	// whatever they left, the mover completes.
	writer.Close(w.ctx)
	mv := mover.New(mover.Config{Meta: w.svc, Rate: -1, Logger: slog.New(slog.DiscardHandler),
		Dial: func(s meta.Server) (mover.BlockServer, error) {
			return blockclient.New(w.addrs[s.ID][siteIndex["a"]], blockclient.Options{}), nil
		}})
	if p, err := mv.Round(w.ctx); err != nil || p.UnderReplicated != 0 && p.BytesMoved == 0 {
		t.Fatalf("mover round: %+v, %v", p, err)
	}
	for i, h := range hashes {
		if n := w.copiesBySite(h); n["a"] != 1 || n["b"] != 1 || n["c"] != 1 {
			t.Fatalf("after the heal and the mover, block %d: copies %v, want one per site", i, n)
		}
	}

	before := w.wanBytes("c")
	reader := w.client("c")
	in, _ = w.svc.GetAttr(w.ctx, in.Ino)
	rh, _, err := reader.Open(w.ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Release(w.ctx)
	got := make([]byte, len(data))
	if n, err := rh.Read(w.ctx, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read at site c: %d bytes, %v", n, err)
	}
	if crossed := w.wanBytes("c") - before; crossed != 0 {
		t.Fatalf("a read at site c of data replicated there sent %d bytes over the WAN", crossed)
	}
}
