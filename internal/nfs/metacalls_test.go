package nfs

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"

	"tessera/internal/meta"
)

// callCount counts, by method, the file-system calls that reach the meta
// service from servers' clients (sessions included: WithSession's API
// counts into the same table).
type callCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCount) add(name string) {
	c.mu.Lock()
	c.n[name]++
	c.mu.Unlock()
}

// take returns the counts since the last take.
func (c *callCount) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	clear(c.n)
	return out
}

func fmtCalls(m map[string]int) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// countedAPI is a meta.API whose file-system calls are counted.
type countedAPI struct {
	meta.API
	svc *meta.Service
	n   *callCount
}

func (a countedAPI) WithSession(id meta.SessionID) meta.API {
	return countedAPI{API: a.svc.WithSession(id), svc: a.svc, n: a.n}
}

func (a countedAPI) Lookup(ctx context.Context, p meta.Ino, name string) (meta.Inode, error) {
	a.n.add("Lookup")
	return a.API.Lookup(ctx, p, name)
}

func (a countedAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	a.n.add("GetAttr")
	return a.API.GetAttr(ctx, ino)
}

func (a countedAPI) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	a.n.add("SetAttr")
	return a.API.SetAttr(ctx, ino, req)
}

func (a countedAPI) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	a.n.add("Create")
	return a.API.Create(ctx, req)
}

func (a countedAPI) Unlink(ctx context.Context, p meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	a.n.add("Unlink")
	return a.API.Unlink(ctx, p, name, reap)
}

func (a countedAPI) GetRecipe(ctx context.Context, ino meta.Ino, first, n uint64) (meta.Recipe, error) {
	a.n.add("GetRecipe")
	return a.API.GetRecipe(ctx, ino, first, n)
}

func (a countedAPI) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	a.n.add("Commit")
	return a.API.Commit(ctx, req)
}

func (a countedAPI) Reap(ctx context.Context, ino meta.Ino) error {
	a.n.add("Reap")
	return a.API.Reap(ctx, ino)
}

func (a countedAPI) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	a.n.add("HoldOpen")
	return a.API.HoldOpen(ctx, ino)
}

func (a countedAPI) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	a.n.add("ReleaseOpen")
	return a.API.ReleaseOpen(ctx, ino)
}

func (a countedAPI) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	a.n.add("GetXattr")
	return a.API.GetXattr(ctx, ino, name)
}

func (a countedAPI) Sync(ctx context.Context) error {
	a.n.add("Sync")
	return a.API.Sync(ctx)
}

// countedCluster is a cluster whose servers' meta calls are counted.
func countedCluster(t *testing.T) (*cluster, *callCount) {
	cl := newCluster(t)
	n := &callCount{n: map[string]int{}}
	cl.api = countedAPI{API: cl.svc, svc: cl.svc, n: n}
	return cl, n
}

// TestSmallFileMetaCalls pins the meta calls of an untar's small file
// over NFS, as a client sends them: CREATE with a mode (Create), one
// UNSTABLE WRITE (HoldOpen: the shared handle's open), COMMIT (Commit and
// Sync: the attributes that check the handle come from vfs's cache, as
// WRITE's do; a GetAttr before), and REMOVE of the name this server made
// (Unlink alone: the create left the name's inode for the unlink's hint,
// as a LOOKUP does; a Lookup before). COMMIT's reply carries the size
// written.
func TestSmallFileMetaCalls(t *testing.T) {
	cl, n := countedCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	rc := dialRaw(t, srv.addr)
	root := rootHandle(srv)
	s, dfh, _ := created(t, rc.one(0, 0, procNFSMkdir, mkdirArgs(root, "d", 0o755)))
	if s != nfsOK {
		t.Fatalf("MKDIR: %d", s)
	}
	// a first file: the directory's attributes come into the cache
	if s, _, _ := created(t, rc.one(0, 0, procNFSCreate, createArgs(dfh, "f0", createUnchecked, sattr{mode: u32p(0o644)}))); s != nfsOK {
		t.Fatalf("CREATE: %d", s)
	}
	n.take()
	want := func(what string, calls string) {
		t.Helper()
		if got := fmtCalls(n.take()); got != calls {
			t.Errorf("%s: meta calls %q, want %q", what, got, calls)
		}
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("f%d", i)
		s, fh, _ := created(t, rc.one(0, 0, procNFSCreate, createArgs(dfh, name, createUnchecked, sattr{mode: u32p(0o644)})))
		if s != nfsOK {
			t.Fatalf("CREATE %s: %d", name, s)
		}
		want("CREATE", "Create 1")
		data := []byte("small file " + name)
		if res := rc.one(0, 0, procNFSWrite, writeArgsOf(fh, 0, data, unstable)); st(res) != nfsOK {
			t.Fatalf("WRITE: %d", st(res))
		}
		want("WRITE", "HoldOpen 1")
		res := rc.one(0, 0, procNFSCommit, commitArgsOf(fh))
		if st(res) != nfsOK {
			t.Fatalf("COMMIT: %d", st(res))
		}
		want("COMMIT", "Commit 1, Sync 1")
		// status, pre_op_attr (none), post_op_attr (set), fattr3
		if len(res) < 12+84 || binary.BigEndian.Uint32(res[4:]) != 0 || binary.BigEndian.Uint32(res[8:]) != 1 {
			t.Fatalf("COMMIT reply %x: want no pre-op and post-op attributes", res)
		}
		if sz := binary.BigEndian.Uint64(res[12+faSize:]); sz != uint64(len(data)) {
			t.Errorf("COMMIT's post-op size %d, want %d", sz, len(data))
		}
	}
	for i := 0; i <= 3; i++ {
		if res := rc.one(0, 0, procNFSRemove, dirOpArgs(dfh, fmt.Sprintf("f%d", i))); st(res) != nfsOK {
			t.Fatalf("REMOVE: %d", st(res))
		}
		want("REMOVE", "Unlink 1")
	}
}

func commitArgsOf(fh []byte) []byte {
	return append(appendOpaque(nil, fh), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
}
