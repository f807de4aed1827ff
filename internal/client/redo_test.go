package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/logtest"
	"tessera/internal/meta"
)

// shared is one meta service and one block store that several clients use,
// as several mounts of one cluster do.
type shared struct {
	api   *meta.Service
	store *memStore
}

func newShared(t testing.TB, bs uint32) *shared {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: bs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	return &shared{api: svc, store: &memStore{blocks: make(map[block.Hash][]byte)}}
}

// client makes one more client of s; api and st replace the shared service
// and store when not nil.
func (s *shared) client(t testing.TB, api meta.API, st block.Store, log *slog.Logger) *Client {
	t.Helper()
	if api == nil {
		api = s.api
	}
	if st == nil {
		st = s.store
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := New(context.Background(), Config{
		Meta:   api,
		Dial:   func(meta.Server) (block.Store, error) { return st, nil },
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (s *shared) create(t testing.TB, name string) meta.Inode {
	t.Helper()
	return createFile(t, s.api, name)
}

// content reads ino's committed content through a fresh client.
func (s *shared) content(t *testing.T, ino meta.Ino) []byte {
	t.Helper()
	ctx := context.Background()
	c := s.client(t, nil, nil, nil)
	h, _, in, err := c.OpenIno(ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	buf := make([]byte, in.Size+10)
	n, err := h.Read(ctx, 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// fill commits data as the content of ino through a client of its own.
func (s *shared) fill(t testing.TB, ino meta.Ino, data []byte) {
	t.Helper()
	ctx := context.Background()
	c := s.client(t, nil, nil, nil)
	h, _, _, err := c.OpenIno(ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, c *Client, ino meta.Ino) *Handle {
	t.Helper()
	ctx := context.Background()
	h, _, _, err := c.OpenIno(ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Release(ctx) })
	return h
}

func write(t *testing.T, h *Handle, off int64, data []byte) {
	t.Helper()
	if _, err := h.Write(context.Background(), off, data); err != nil {
		t.Fatal(err)
	}
}

func flush(t *testing.T, h *Handle) {
	t.Helper()
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// apply returns buf with data written at off (grown as needed).
func apply(buf []byte, off int64, data []byte) []byte {
	if end := int(off) + len(data); end > len(buf) {
		buf = append(buf, make([]byte, end-len(buf))...)
	}
	copy(buf[off:], data)
	return buf
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// TestRedoDisjointWrites: two and three clients write disjoint ranges of one
// block, each having read the block before the others committed; every
// write survives.
func TestRedoDisjointWrites(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d clients", n), func(t *testing.T) {
			const bs = 64 << 10
			s := newShared(t, bs)
			in := s.create(t, "f")
			rng := rand.New(rand.NewSource(int64(n)))
			want := randBytes(rng, 3*bs)
			s.fill(t, in.Ino, want)
			var hs []*Handle
			var cs []*Client
			for i := 0; i < n; i++ {
				c := s.client(t, nil, nil, nil)
				h := open(t, c, in.Ino)
				// Read block 1, so each client bases its write on it.
				if _, err := h.Read(context.Background(), bs, make([]byte, 10)); err != nil {
					t.Fatal(err)
				}
				cs, hs = append(cs, c), append(hs, h)
			}
			for i, h := range hs {
				off := int64(bs + 100 + 1000*i)
				data := bytes.Repeat([]byte{byte('A' + i)}, 500)
				write(t, h, off, data)
				want = apply(want, off, data)
			}
			for _, h := range hs {
				flush(t, h)
			}
			if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
				t.Fatalf("file lost a write: %d bytes, differ from the %d expected at %d", len(got), len(want), firstDiff(got, want))
			}
			var conflicts, retries uint64
			for _, c := range cs {
				st := c.Stats()
				conflicts, retries = conflicts+st.Conflicts, retries+st.RedoRetries
				if st.Commits != 1 || st.CommitsFailed != 0 {
					t.Fatalf("stats %+v: want 1 commit, none failed", st)
				}
			}
			if conflicts != uint64(n-1) || retries != uint64(n-1) {
				t.Fatalf("%d conflicts, %d retries; want %d each (all but the first writer redo once)", conflicts, retries, n-1)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRedoOverlappingWrites: overlapping writes of two clients end up as
// one of them wrote last, whole, never mixed.
func TestRedoOverlappingWrites(t *testing.T) {
	const bs = 64 << 10
	s := newShared(t, bs)
	in := s.create(t, "f")
	base := randBytes(rand.New(rand.NewSource(7)), 2*bs)
	s.fill(t, in.Ino, base)
	a := open(t, s.client(t, nil, nil, nil), in.Ino)
	b := open(t, s.client(t, nil, nil, nil), in.Ino)
	// Both writes span the block boundary, so atomicity spans blocks too.
	aOff, aData := int64(bs-300), bytes.Repeat([]byte{'A'}, 600)
	bOff, bData := int64(bs-100), bytes.Repeat([]byte{'B'}, 700)
	write(t, a, aOff, aData)
	write(t, b, bOff, bData)
	flush(t, b)
	flush(t, a)
	got := s.content(t, in.Ino)
	ab := apply(apply(bytes.Clone(base), aOff, aData), bOff, bData)
	ba := apply(apply(bytes.Clone(base), bOff, bData), aOff, aData)
	if !bytes.Equal(got, ab) && !bytes.Equal(got, ba) {
		t.Fatalf("content is neither A-then-B (differs at %d) nor B-then-A (differs at %d)", firstDiff(got, ab), firstDiff(got, ba))
	}
	if !bytes.Equal(got, ba) {
		t.Fatalf("B committed first, A redid on top: want B-then-A")
	}
}

// TestRedoInline covers block 0 kept inline on either side of a conflict.
func TestRedoInline(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	t.Run("both inline", func(t *testing.T) {
		s := newShared(t, bs)
		in := s.create(t, "f")
		want := bytes.Repeat([]byte{'.'}, 200)
		s.fill(t, in.Ino, want)
		a := open(t, s.client(t, nil, nil, nil), in.Ino)
		b := open(t, s.client(t, nil, nil, nil), in.Ino)
		write(t, a, 10, []byte("aaaa"))
		write(t, b, 100, []byte("bbbb"))
		write(t, b, 300, []byte("end")) // B extends the file
		flush(t, b)
		flush(t, a)
		want = apply(apply(apply(want, 10, []byte("aaaa")), 100, []byte("bbbb")), 300, []byte("end"))
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("got %q\nwant %q", got, want)
		}
		if got, _ := s.api.GetAttr(ctx, in.Ino); !got.HasInline {
			t.Fatalf("a small file redone is no longer inline")
		}
	})
	t.Run("ours inline, current a block", func(t *testing.T) {
		s := newShared(t, bs)
		in := s.create(t, "f")
		a := open(t, s.client(t, nil, nil, nil), in.Ino)
		b := open(t, s.client(t, nil, nil, nil), in.Ino)
		big := randBytes(rand.New(rand.NewSource(3)), 10000)
		write(t, a, 5, []byte("small"))
		write(t, b, 0, big)
		flush(t, b)
		flush(t, a)
		want := apply(bytes.Clone(big), 5, []byte("small"))
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, want), len(got), len(want))
		}
	})
	t.Run("current inline, ours a block", func(t *testing.T) {
		s := newShared(t, bs)
		in := s.create(t, "f")
		want := bytes.Repeat([]byte{'.'}, 100)
		s.fill(t, in.Ino, want)
		a := open(t, s.client(t, nil, nil, nil), in.Ino)
		b := open(t, s.client(t, nil, nil, nil), in.Ino)
		aData := randBytes(rand.New(rand.NewSource(4)), 1000)
		write(t, a, 5000, aData) // past InlineMax: block 0 is uploaded
		write(t, b, 10, []byte("bbbb"))
		flush(t, b)
		flush(t, a)
		want = apply(apply(want, 10, []byte("bbbb")), 5000, aData)
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, want), len(got), len(want))
		}
	})
}

// TestRedoTruncate: a truncate that conflicts with another client's write
// to the cut block cuts the current content, keeping that write below the
// new size; a truncate up on a stale size clears what another client wrote
// past this client's view of the end only from the new size on.
func TestRedoTruncate(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	t.Run("down", func(t *testing.T) {
		s := newShared(t, bs)
		in := s.create(t, "f")
		want := randBytes(rand.New(rand.NewSource(5)), 3*bs)
		s.fill(t, in.Ino, want)
		ca := s.client(t, nil, nil, nil)
		a := open(t, ca, in.Ino)
		if _, err := a.Read(ctx, bs, make([]byte, 10)); err != nil { // load A's recipe
			t.Fatal(err)
		}
		stale, _ := ca.Meta().GetAttr(ctx, in.Ino)
		b := open(t, s.client(t, nil, nil, nil), in.Ino)
		write(t, b, bs+500, []byte("kept"))
		write(t, b, bs+5000, []byte("cut"))
		flush(t, b)
		if _, err := ca.Truncate(ctx, stale, bs+1000); err != nil {
			t.Fatal(err)
		}
		want = apply(want, bs+500, []byte("kept"))[:bs+1000]
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, want), len(got), len(want))
		}
		// Growing the file again must read zeros, not B's cut bytes.
		if _, err := ca.Truncate(ctx, stale, 2*bs); err != nil {
			t.Fatal(err)
		}
		want = append(want, make([]byte, bs-1000)...)
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("after growing: differs at %d", firstDiff(got, want))
		}
		if st := ca.Stats(); st.Conflicts != 1 {
			t.Fatalf("A met %d conflicts; want 1", st.Conflicts)
		}
	})
	t.Run("up on a stale size", func(t *testing.T) {
		s := newShared(t, bs)
		in := s.create(t, "f")
		want := randBytes(rand.New(rand.NewSource(6)), bs+100)
		s.fill(t, in.Ino, want)
		ca := s.client(t, nil, nil, nil)
		a := open(t, ca, in.Ino) // A sees size bs+100
		_ = a
		stale, _ := ca.Meta().GetAttr(ctx, in.Ino)
		b := open(t, s.client(t, nil, nil, nil), in.Ino)
		write(t, b, bs+200, []byte("kept"))
		write(t, b, bs+5000, []byte("cut"))
		flush(t, b)
		if _, err := ca.Truncate(ctx, stale, bs+1000); err != nil {
			t.Fatal(err)
		}
		want = apply(want, bs+200, []byte("kept"))
		want = append(want, make([]byte, bs+1000-len(want))...)
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, want), len(got), len(want))
		}
		if _, err := ca.Truncate(ctx, stale, 2*bs); err != nil {
			t.Fatal(err)
		}
		want = append(want, make([]byte, bs-1000)...)
		if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
			t.Fatalf("after growing: differs at %d: B's bytes past the truncate survived", firstDiff(got, want))
		}
	})
}

// TestRedoStaleSize: a client whose size is stale writes into the block
// another client extended; the other client's bytes past the stale end
// survive, whether the writer's recipe was read before or after.
func TestRedoStaleSize(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	for _, readFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("recipe read before: %v", readFirst), func(t *testing.T) {
			s := newShared(t, bs)
			in := s.create(t, "f")
			want := randBytes(rand.New(rand.NewSource(8)), bs+100)
			s.fill(t, in.Ino, want)
			a := open(t, s.client(t, nil, nil, nil), in.Ino)
			if readFirst {
				if _, err := a.Read(ctx, bs, make([]byte, 10)); err != nil {
					t.Fatal(err)
				}
			}
			b := open(t, s.client(t, nil, nil, nil), in.Ino)
			write(t, b, bs+100, []byte("appended by B"))
			flush(t, b)
			write(t, a, bs+10, []byte("A"))
			flush(t, a)
			want = apply(apply(want, bs+100, []byte("appended by B")), bs+10, []byte("A"))
			if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
				t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, want), len(got), len(want))
			}
		})
	}
}

// gatedStore holds Puts until release is closed, once armed.
type gatedStore struct {
	*memStore
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.entered)
		<-g.release
	}
	return g.memStore.Put(ctx, h, data)
}

// TestRedoRebasesWritesDuringCommit: a write made while a commit waits for
// its uploads, to a block the commit then redoes, keeps the other client's
// bytes the redo merged in.
func TestRedoRebasesWritesDuringCommit(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	in := s.create(t, "f")
	want := randBytes(rand.New(rand.NewSource(9)), 2*bs)
	s.fill(t, in.Ino, want)
	g := &gatedStore{memStore: s.store, entered: make(chan struct{}), release: make(chan struct{})}
	a := open(t, s.client(t, nil, g, nil), in.Ino)
	b := open(t, s.client(t, nil, nil, nil), in.Ino)
	write(t, a, bs, []byte("first"))
	write(t, b, bs+100, []byte("B's write"))
	flush(t, b)
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	done := make(chan error)
	go func() { done <- a.Flush(ctx) }()
	<-g.entered // A's commit waits for the upload of block 1
	write(t, a, bs+50, []byte("second"))
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	flush(t, a)
	want = apply(apply(apply(want, bs, []byte("first")), bs+100, []byte("B's write")), bs+50, []byte("second"))
	if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
		t.Fatalf("content differs at %d", firstDiff(got, want))
	}
}

// commitRec is one write and the change counter of the commit that
// installed it.
type commitRec struct {
	change uint64
	off    int64
	data   []byte
}

// TestRedoRandomConcurrent: K clients each make M rounds of one random small
// write and a commit, concurrently, on one file. Replaying the writes in
// the order of their commits over zeros must give the file's content.
func TestRedoRandomConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bs    uint32
		span  int64 // writes fall in [0, span)
		maxN  int
		k, m  int
		force bool
	}{
		{name: "3 blocks", bs: 8 << 10, span: 3 * 8 << 10, maxN: 1500, k: 4, m: 40},
		{name: "inline", bs: 8 << 10, span: 3000, maxN: 200, k: 3, m: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := *seedFlag
			if seed == 0 {
				seed = time.Now().UnixNano()
			}
			t.Logf("seed %d (replay with -client.seed=%d)", seed, seed)
			ctx := context.Background()
			s := newShared(t, tc.bs)
			in := s.create(t, "f")
			var mu sync.Mutex
			var recs []commitRec
			var wg sync.WaitGroup
			errs := make(chan error, tc.k)
			clients := make([]*Client, tc.k)
			for i := range tc.k {
				clients[i] = s.client(t, nil, nil, nil)
				h := open(t, clients[i], in.Ino)
				rng := rand.New(rand.NewSource(seed + int64(i)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range tc.m {
						off := rng.Int63n(tc.span)
						data := randBytes(rng, 1+rng.Intn(tc.maxN))
						if _, err := h.Write(ctx, off, data); err != nil {
							errs <- err
							return
						}
						// Under heavy contention a commit may give up
						// (EIO); its writes stay buffered and the next
						// flush commits them, as an application's retry
						// of fsync would.
						err := h.Flush(ctx)
						for try := 0; errors.Is(err, syscall.EIO) && try < 5; try++ {
							err = h.Flush(ctx)
						}
						if err != nil {
							errs <- fmt.Errorf("client %d: %w", i, err)
							return
						}
						h.f.mu.Lock()
						change := h.f.change
						h.f.mu.Unlock()
						mu.Lock()
						recs = append(recs, commitRec{change, off, data})
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("seed %d: %v", seed, err)
			}
			sort.Slice(recs, func(i, j int) bool { return recs[i].change < recs[j].change })
			var want []byte
			for i, r := range recs {
				if i > 0 && recs[i-1].change == r.change {
					t.Fatalf("seed %d: two commits returned change %d", seed, r.change)
				}
				want = apply(want, r.off, r.data)
			}
			if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: content (%d bytes) differs from the replay in commit order (%d bytes) at %d", seed, len(got), len(want), firstDiff(got, want))
			}
			var st Stats
			for _, c := range clients {
				cs := c.Stats()
				st.Commits += cs.Commits
				st.Conflicts += cs.Conflicts
				st.RedoRetries += cs.RedoRetries
				st.CommitsFailed += cs.CommitsFailed
			}
			t.Logf("%d commits, %d conflicts, %d redo retries, %d commits failed after retries", st.Commits, st.Conflicts, st.RedoRetries, st.CommitsFailed)
			if st.Commits != uint64(tc.k*tc.m) {
				t.Fatalf("%d commits; want %d", st.Commits, tc.k*tc.m)
			}
		})
	}
}

// alwaysConflict is a meta.API whose commits always conflict, without
// saying which blocks changed.
type alwaysConflict struct{ meta.API }

func (a alwaysConflict) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	return meta.Inode{}, fmt.Errorf("commit inode %d: %w", req.Ino, &meta.ConflictError{Ino: req.Ino})
}

// TestRedoGivesUp: a commit that conflicts at every attempt fails with EIO
// after maxCommitAttempts, logging the inode, the blocks and the attempts;
// the data stays buffered and commits once the conflicts stop.
func TestRedoGivesUp(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	in := s.create(t, "f")
	s.fill(t, in.Ino, make([]byte, 3*bs))
	var logs logtest.Buffer
	c := s.client(t, alwaysConflict{s.api}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	var waits []time.Duration
	c.redo.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	h := open(t, c, in.Ino)
	write(t, h, bs+10, []byte("x"))
	write(t, h, 2*bs+10, []byte("y"))
	err := h.Flush(ctx)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush: %v; want EIO", err)
	}
	st := c.Stats()
	if st.Conflicts != maxCommitAttempts || st.RedoRetries != maxCommitAttempts-1 || st.CommitsFailed != 1 || st.Commits != 0 {
		t.Fatalf("stats %+v; want %d conflicts, %d retries, 1 failed", st, maxCommitAttempts, maxCommitAttempts-1)
	}
	// The first conflict is redone at once; later ones wait first.
	if len(waits) != maxCommitAttempts-2 {
		t.Fatalf("%d waits between attempts; want %d", len(waits), maxCommitAttempts-2)
	}
	for i, d := range waits {
		if hi := time.Millisecond << min(i, 5); d < hi/2 || d > hi {
			t.Fatalf("backoff %v: wait %d is %v, not in [%v, %v]", waits, i, d, hi/2, hi)
		}
	}
	line := logs.String()
	want := fmt.Sprintf("inode=%d blocks=\"[1 2]\" attempts=%d", in.Ino, maxCommitAttempts)
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, want) {
		t.Fatalf("log %q; want one line with %q", line, want)
	}
	// The change was kept: through the real service it commits.
	c.api = s.api
	flush(t, h)
	got := s.content(t, in.Ino)
	if got[bs+10] != 'x' || got[2*bs+10] != 'y' {
		t.Fatalf("the writes of the failed commit were lost")
	}
}

// TestForcedLastWriterWins: with SetForced(true) a conflicting commit is
// not redone; the last writer's whole block wins.
func TestForcedLastWriterWins(t *testing.T) {
	const bs = 64 << 10
	s := newShared(t, bs)
	in := s.create(t, "f")
	base := randBytes(rand.New(rand.NewSource(10)), 2*bs)
	s.fill(t, in.Ino, base)
	ca, cb := s.client(t, nil, nil, nil), s.client(t, nil, nil, nil)
	a, b := open(t, ca, in.Ino), open(t, cb, in.Ino)
	a.SetForced(true)
	b.SetForced(true)
	write(t, a, bs+10, []byte("A"))
	write(t, b, bs+20, []byte("B"))
	flush(t, a)
	flush(t, b)
	want := apply(bytes.Clone(base), bs+20, []byte("B")) // A's write is lost with its block
	if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
		t.Fatalf("content differs at %d; want B's whole block", firstDiff(got, want))
	}
	if st := cb.Stats(); st.Conflicts != 0 || st.RedoRetries != 0 || st.Commits != 1 {
		t.Fatalf("B's stats %+v: want one commit and no conflict", st)
	}
}

// BenchmarkContendedCommits: 4 clients each write 100 bytes into one shared
// block and commit, in a loop, concurrently. It reports commits and redo
// retries per second (b.N commits in all).
func BenchmarkContendedCommits(b *testing.B) {
	const bs, k = 64 << 10, 4
	ctx := context.Background()
	t := b
	s := newShared(t, bs)
	in := s.create(t, "f")
	s.fill(t, in.Ino, make([]byte, 2*bs))
	clients := make([]*Client, k)
	handles := make([]*Handle, k)
	for i := range k {
		clients[i] = s.client(t, nil, nil, nil)
		handles[i] = open(t, clients[i], in.Ino)
	}
	data := bytes.Repeat([]byte{'x'}, 100)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range k {
		n := b.N / k
		if i < b.N%k {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				handles[i].Write(ctx, int64(bs+200*i+j%50), data)
				for handles[i].Flush(ctx) != nil {
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	b.StopTimer()
	var retries, failed uint64
	for _, c := range clients {
		st := c.Stats()
		retries, failed = retries+st.RedoRetries, failed+st.CommitsFailed
	}
	b.ReportMetric(float64(b.N)/secs, "commits/s")
	b.ReportMetric(float64(retries)/secs, "retries/s")
	b.ReportMetric(float64(failed)/secs, "failed/s")
}
