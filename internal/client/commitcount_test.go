package client

import (
	"context"
	"maps"
	"math/rand"
	"sync"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// callCounter counts, by name, the meta calls of the file paths a small
// commit could take.
type callCounter struct {
	meta.API
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) count(name string) {
	c.mu.Lock()
	c.n[name]++
	c.mu.Unlock()
}

func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	clear(c.n)
	return out
}

func (c *callCounter) Lookup(ctx context.Context, p meta.Ino, name string) (meta.Inode, error) {
	c.count("lookup")
	return c.API.Lookup(ctx, p, name)
}

func (c *callCounter) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	c.count("getattr")
	return c.API.GetAttr(ctx, ino)
}

func (c *callCounter) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	c.count("setattr")
	return c.API.SetAttr(ctx, ino, req)
}

func (c *callCounter) GetRecipe(ctx context.Context, ino meta.Ino, first, n uint64) (meta.Recipe, error) {
	c.count("getrecipe")
	return c.API.GetRecipe(ctx, ino, first, n)
}

func (c *callCounter) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	c.count("commit")
	return c.API.Commit(ctx, req)
}

func (c *callCounter) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	c.count("holdopen")
	return c.API.HoldOpen(ctx, ino)
}

func (c *callCounter) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	c.count("getxattr")
	return c.API.GetXattr(ctx, ino, name)
}

func (c *callCounter) Sync(ctx context.Context) error {
	c.count("sync")
	return c.API.Sync(ctx)
}

func (c *callCounter) StatFS(ctx context.Context) (meta.StatFS, error) {
	c.count("statfs")
	return c.API.StatFS(ctx)
}

// putCounter counts the blocks put.
type putCounter struct {
	*memStore
	mu   sync.Mutex
	puts int
}

func (p *putCounter) Put(ctx context.Context, h block.Hash, data []byte) error {
	p.mu.Lock()
	p.puts++
	p.mu.Unlock()
	return p.memStore.Put(ctx, h, data)
}

func (p *putCounter) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.puts
	p.puts = 0
	return n
}

// TestSmallCommitCalls: an SQLite commit in WAL mode (a frame header and
// a page appended, then fsync) costs under session one patch upload, one
// meta commit and one meta sync, and under posix one upload and one
// commit per write and one sync: nothing else reaches the meta service
// or the block server (issue 28). Group commit does not apply: one
// writer's fsyncs follow each other (SQLite holds its write lock through
// the commit), and under session each must be durable when it returns.
func TestSmallCommitCalls(t *testing.T) {
	for _, tc := range []struct {
		policy        string
		commits, puts int
	}{{"session", 1, 1}, {"posix", 2, 2}} {
		t.Run(tc.policy, func(t *testing.T) {
			ctx := context.Background()
			s := newShared(t, meta.DefaultBlockSize)
			cm := &callCounter{API: s.api, n: make(map[string]int)}
			st := &putCounter{memStore: s.store}
			c := testClient(t, cm, map[string]*putCounter{"b0": st}, Config{Policy: tc.policy})
			in := s.create(t, "wal")
			rng := rand.New(rand.NewSource(28))
			h := open(t, c, in.Ino)
			end := int64(64 << 10)
			write(t, h, 0, randBytes(rng, int(end)))
			if err := h.Fsync(ctx); err != nil {
				t.Fatal(err)
			}
			const commits = 20
			for i := range commits {
				if i == 2 {
					// One of the first two reads the block's
					// recipe window, once (the file was written
					// from empty: it was never read); later
					// commits keep it up to date.
					cm.take()
					st.take()
				}
				write(t, h, end, randBytes(rng, 24))
				write(t, h, end+24, randBytes(rng, 4096))
				end += 24 + 4096
				if err := h.Fsync(ctx); err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
				if i < 2 {
					continue
				}
				want := map[string]int{"commit": tc.commits, "sync": 1}
				if got := cm.take(); !maps.Equal(got, want) {
					t.Fatalf("commit %d: meta calls %v, want %v", i, got, want)
				}
				if got := st.take(); got != tc.puts {
					t.Fatalf("commit %d: %d blocks put, want %d", i, got, tc.puts)
				}
			}
		})
	}
}
