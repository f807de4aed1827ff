package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/clock"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// progressCluster is a meta service with servers b0..b<n-1> (disk stores)
// and one file whose blocks are contents, stored on the servers named by
// on (every server when nil).
func progressCluster(t *testing.T, n int, contents []string, on []string) (*Cluster, map[string]*disk.Store, []block.Hash) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]*disk.Store{}
	every := on == nil
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[id] = st
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id}); err != nil {
			t.Fatal(err)
		}
		if every {
			on = append(on, id)
		}
	}
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	var hashes []block.Hash
	var changes []meta.BlockChange
	for i, c := range contents {
		data := []byte(c)
		h := block.Sum(data)
		for _, id := range on {
			if err := stores[id].Put(ctx, h, data); err != nil {
				t.Fatal(err)
			}
		}
		hashes = append(hashes, h)
		changes = append(changes, meta.BlockChange{Index: uint64(i), New: h})
	}
	size := uint64(len(contents)-1)*(64<<10) + uint64(len(contents[len(contents)-1]))
	if _, err := svc.Commit(ctx, meta.CommitReq{Ino: in.Ino, Forced: true, Size: size, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Meta: svc, Dial: func(s meta.Server) (BlockServer, error) { return stores[s.ID], nil }}
	return c, stores, hashes
}

// progressLog records reports and checks that within a phase Done and
// Bytes never go back and never pass a known total.
type progressLog struct {
	t       *testing.T
	reports []Progress
}

func (l *progressLog) record(p Progress) {
	if n := len(l.reports); n > 0 {
		prev := l.reports[n-1]
		if prev.Op == p.Op && prev.Phase == p.Phase && (p.Done < prev.Done || p.Bytes < prev.Bytes) {
			l.t.Errorf("progress went back: %+v after %+v", p, prev)
		}
	}
	if p.Total > 0 && p.Done > p.Total || p.TotalBytes > 0 && p.Bytes > p.TotalBytes {
		l.t.Errorf("progress past its total: %+v", p)
	}
	l.reports = append(l.reports, p)
}

// phases lists the phases in the order they were reported.
func (l *progressLog) phases() []string {
	var out []string
	for _, p := range l.reports {
		if len(out) == 0 || out[len(out)-1] != p.Phase {
			out = append(out, p.Phase)
		}
	}
	return out
}

// last is the latest report of phase.
func (l *progressLog) last(phase string) Progress {
	var out Progress
	for _, p := range l.reports {
		if p.Phase == phase {
			out = p
		}
	}
	return out
}

// TestFsckProgress: fsck reports its walk, then one check report per
// block, ending at every block and byte of the live blocks.
func TestFsckProgress(t *testing.T) {
	contents := []string{string(make([]byte, 64<<10)) + "", "second block", "x"}
	contents[0] = "first " + contents[0][6:]
	c, _, _ := progressCluster(t, 2, contents, nil)
	l := &progressLog{t: t}
	c.Progress = l.record
	r, err := Fsck(context.Background(), c, io.Discard, FsckOptions{})
	if err != nil || r.Problems() != 0 {
		t.Fatalf("fsck: %+v, %v", r, err)
	}
	if got := l.phases(); !slices.Equal(got, []string{"walk", "check"}) {
		t.Fatalf("phases %v, want [walk check]", got)
	}
	var bytes int64
	for _, s := range contents {
		bytes += int64(len(s))
	}
	want := Progress{Op: "fsck", Phase: "check", Done: 3, Total: 3, Bytes: bytes, TotalBytes: bytes}
	if got := l.last("check"); got != want {
		t.Fatalf("last check report %+v, want %+v", got, want)
	}
	if w := l.last("walk"); w.Done != 3 || w.Total != 3 {
		t.Fatalf("last walk report %+v, want the 3 recipe entries", w)
	}
}

// TestGCProgress: gc scans every copy on every server, its total sized
// by the servers' usage, then reports the removal of what is dead.
func TestGCProgress(t *testing.T) {
	ctx := context.Background()
	c, stores, _ := progressCluster(t, 2, []string{"live"}, nil)
	dead := []byte("dead block")
	if err := stores["b1"].Put(ctx, block.Sum(dead), dead); err != nil {
		t.Fatal(err)
	}
	l := &progressLog{t: t}
	c.Progress = l.record
	r, err := GC(ctx, c, 0, time.Now().Add(time.Hour))
	if err != nil || r.Removed != 1 {
		t.Fatalf("gc: %+v, %v; want the dead block removed", r, err)
	}
	if got := l.phases(); !slices.Equal(got, []string{"walk", "scan", "remove"}) {
		t.Fatalf("phases %v, want [walk scan remove]", got)
	}
	all := int64(2*len("live") + len(dead))
	if got, want := l.last("scan"), (Progress{Op: "gc", Phase: "scan", Done: 3, Total: 3, Bytes: all, TotalBytes: all}); got != want {
		t.Fatalf("last scan report %+v, want %+v", got, want)
	}
	n := int64(len(dead))
	if got, want := l.last("remove"), (Progress{Op: "gc", Phase: "remove", Done: 1, Total: 1, Bytes: n, TotalBytes: n}); got != want {
		t.Fatalf("last remove report %+v, want %+v", got, want)
	}
}

// TestDrainWaits: a waiting drain reports the live blocks the server held
// and returns once the last of them left it (what the mover does, done
// here by hand between polls of a fake clock); a server undrained
// meanwhile ends the wait with ErrDrainStopped.
func TestDrainWaits(t *testing.T) {
	ctx := context.Background()
	c, stores, hashes := progressCluster(t, 3, []string{"one", "two"}, []string{"b0"})
	clk := clock.NewFake(time.Unix(1000, 0))
	l := &progressLog{t: t}
	c.Progress = l.record
	type result struct {
		r   DrainReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Drain(ctx, c, "b0", DrainOptions{Wait: true, Poll: time.Second, Clock: clk})
		done <- result{r, err}
	}()
	waitArmed := func(arms uint64) {
		for i := 0; clk.Arms() < arms; i++ {
			if i == 60_000 {
				t.Fatal("drain never waited for its next poll")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitArmed(1)
	// The mover copied both away and removed one from b0.
	for _, h := range hashes {
		data, err := stores["b0"].Get(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := stores["b1"].Put(ctx, h, data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stores["b0"].Remove(ctx, hashes[0], time.Now().Add(time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	waitArmed(2)
	if _, err := stores["b0"].Remove(ctx, hashes[1], time.Now().Add(time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	res := <-done
	if res.err != nil || res.r.Blocks != 2 || res.r.Bytes != 6 {
		t.Fatalf("drain: %+v, %v; want 2 blocks of 6 bytes moved", res.r, res.err)
	}
	var dones []int64
	for _, p := range l.reports {
		dones = append(dones, p.Done)
		if p.Op != "drain" || p.Phase != "move" || p.Total != 2 || p.TotalBytes != 6 {
			t.Fatalf("drain report %+v, want move of 2 blocks, 6 bytes", p)
		}
	}
	if !slices.Equal(dones, []int64{0, 1, 2}) {
		t.Fatalf("drain reported done %v, want [0 1 2]", dones)
	}
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := findServer(m, "b0"); s.State != meta.StateDraining {
		t.Fatalf("b0 is %s after its drain, want draining", s.State)
	}

	// Undrained while a drain of b1 waits: the wait ends, saying so.
	l.reports = nil
	go func() {
		r, err := Drain(ctx, c, "b1", DrainOptions{Wait: true, Poll: time.Second, Clock: clk})
		done <- result{r, err}
	}()
	waitArmed(3)
	if _, err := c.Meta.SetServerState(ctx, "b1", meta.StateUp); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if res := <-done; !errors.Is(res.err, ErrDrainStopped) {
		t.Fatalf("drain of a server undrained meanwhile: %v, want ErrDrainStopped", res.err)
	}
}
