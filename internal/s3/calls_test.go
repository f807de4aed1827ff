package s3

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// counting counts the meta calls made through it, by name.
type counting struct {
	meta.API
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) add(name string) { c.mu.Lock(); c.n[name]++; c.mu.Unlock() }
func (c *counting) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for k, v := range c.n {
		s = append(s, k+"="+strconv.Itoa(v))
	}
	sort.Strings(s)
	clear(c.n)
	return strings.Join(s, " ")
}

func (c *counting) Lookup(ctx context.Context, p meta.Ino, n string) (meta.Inode, error) {
	c.add("Lookup")
	return c.API.Lookup(ctx, p, n)
}
func (c *counting) GetAttr(ctx context.Context, i meta.Ino) (meta.Inode, error) {
	c.add("GetAttr")
	return c.API.GetAttr(ctx, i)
}
func (c *counting) Create(ctx context.Context, r meta.CreateReq) (meta.Inode, error) {
	c.add("Create")
	return c.API.Create(ctx, r)
}
func (c *counting) Commit(ctx context.Context, r meta.CommitReq) (meta.Inode, error) {
	c.add("Commit")
	return c.API.Commit(ctx, r)
}
func (c *counting) SetXattr(ctx context.Context, i meta.Ino, n string, v []byte, f uint32) error {
	c.add("SetXattr")
	return c.API.SetXattr(ctx, i, n, v, f)
}
func (c *counting) GetXattr(ctx context.Context, i meta.Ino, n string) ([]byte, error) {
	c.add("GetXattr")
	return c.API.GetXattr(ctx, i, n)
}
func (c *counting) Link(ctx context.Context, i, p meta.Ino, n string) (meta.Inode, error) {
	c.add("Link")
	return c.API.Link(ctx, i, p, n)
}
func (c *counting) Rename(ctx context.Context, a meta.Ino, an string, b meta.Ino, bn string, f uint32) (meta.Inode, error) {
	c.add("Rename")
	return c.API.Rename(ctx, a, an, b, bn, f)
}
func (c *counting) HoldOpen(ctx context.Context, i meta.Ino) (meta.Inode, error) {
	c.add("HoldOpen")
	return c.API.HoldOpen(ctx, i)
}
func (c *counting) GetRecipe(ctx context.Context, i meta.Ino, first, count uint64) (meta.Recipe, error) {
	c.add("GetRecipe")
	return c.API.GetRecipe(ctx, i, first, count)
}
func (c *counting) Unlink(ctx context.Context, p meta.Ino, n string, reap meta.Ino) (meta.Inode, error) {
	c.add("Unlink")
	return c.API.Unlink(ctx, p, n, reap)
}
func (c *counting) ReleaseOpen(ctx context.Context, i meta.Ino) error {
	c.add("ReleaseOpen")
	return c.API.ReleaseOpen(ctx, i)
}

// TestCallsPerRequest: the meta calls a small PUT, GET and HEAD make. A
// directory looked up in a request serves its permission checks in the
// same request (vfs.WithFresh), the backend's own records are read and
// written without permission lookups, and a new key is linked under its
// name (no temporary name and rename; the name taken is found by the
// link failing, not by a lookup first), a bucket and a key's directories
// found are kept a second (bucketcache.go, dircache.go), a GET's open
// uses the attributes just looked up, a PUT writes its record with the
// attributes its commit returned, a small object's GET is answered from
// its lookup (inline content), and a record read is kept while the
// object's change counter stays (recordcache.go). Before: a PUT of a new
// key made 18 calls (8 GetAttr), a GET 8, a HEAD 6; then 7 (5 updates), 4
// and 2, and two lookups more for a key two directories deep; then 5, 4
// and 2.
func TestCallsPerRequest(t *testing.T) {
	cnt := &counting{n: map[string]int{}}
	clk := clock.NewFake(time.Unix(1_000_000, 0)) // the bucket found stays cached
	f := newFixtureWrapped(t, Config{Clock: clk}, func(a meta.API) meta.API { cnt.API = a; return cnt })
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	f.put(t, ctx, "bkt", "warm", []byte("x"))
	cnt.take()
	head := func(key string) {
		if _, err := f.b.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: ptr("bkt"), Key: ptr(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		what string
		do   func()
		want string
	}{
		{"PUT of a new key", func() { f.put(t, ctx, "bkt", "new", make([]byte, 4096)) },
			"Commit=1 Create=1 Link=1 ReleaseOpen=1 SetXattr=1"},
		{"PUT over a key", func() { f.put(t, ctx, "bkt", "new", make([]byte, 4096)) },
			"Commit=1 Create=1 Link=2 Lookup=2 ReleaseOpen=1 Rename=1 SetXattr=1"},
		// A small object's content comes with its lookup (inline block
		// 0): no open; its record, read once, is kept while the
		// inode's change counter stays (recordcache.go).
		{"GET", func() { f.get(t, ctx, "bkt", "new") }, "GetXattr=1 Lookup=1"},
		{"HEAD", func() { head("new") }, "Lookup=1"},
		{"GET again", func() { f.get(t, ctx, "bkt", "new") }, "Lookup=1"},
		// One larger than a block is opened and read.
		{"PUT of a large key", func() { f.put(t, ctx, "bkt", "big", make([]byte, 2*testBlock)) },
			"Commit=1 Create=1 Link=1 ReleaseOpen=1 SetXattr=1"},
		// A new key's record is kept from its PUT (keyed by the
		// link's reply).
		{"HEAD of a large key", func() { head("big") }, "Lookup=1"},
		{"GET of a large key", func() { f.get(t, ctx, "bkt", "big") }, "GetRecipe=1 HoldOpen=1 Lookup=1 ReleaseOpen=1"},
		{"HEAD of a large key after its GET", func() { head("big") }, "Lookup=1"},
		// Two levels deep: the first PUT makes the directories; after
		// it they are kept (dircache.go).
		{"PUT of a new key in new directories", func() { f.put(t, ctx, "bkt", "d1/d2/k", make([]byte, 4096)) },
			"Commit=1 Create=3 Link=1 Lookup=2 ReleaseOpen=1 SetXattr=1"},
		{"PUT of a new key in kept directories", func() { f.put(t, ctx, "bkt", "d1/d2/k2", make([]byte, 4096)) },
			"Commit=1 Create=1 Link=1 ReleaseOpen=1 SetXattr=1"},
		{"HEAD in kept directories", func() { head("d1/d2/k") }, "Lookup=1"},
		{"HEAD again", func() { head("d1/d2/k") }, "Lookup=1"},
	} {
		tc.do()
		if got := cnt.take(); got != tc.want {
			t.Errorf("%s: meta calls %s, want %s", tc.what, got, tc.want)
		}
	}
}

// TestBucketCache: a bucket removed behind the endpoint's back (here by
// vfs, as another client would) is seen within bucketTTL on the backend's
// clock; one deleted through the endpoint at once; a missing bucket is
// never kept.
func TestBucketCache(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	f := newFixtureWith(t, Config{Clock: clk})
	ctx := f.key(t, "alice", RoleRW, "")
	head := func(bucket string) string {
		if _, err := f.b.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket}); err != nil {
			return asAPIError(err).Code
		}
		return "ok"
	}
	if got := head("bkt"); got != "NoSuchBucket" {
		t.Fatalf("HEAD of a bucket not made: %s", got)
	}
	f.bucket(t, ctx, "bkt")
	if got := head("bkt"); got != "ok" {
		t.Fatalf("HEAD of a bucket just made (a missing one is not kept): %s", got)
	}
	if err := f.b.v.Rmdir(context.Background(), vfs.Root, meta.RootIno, "bkt"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(bucketTTL - time.Millisecond)
	if got := head("bkt"); got != "ok" {
		t.Fatalf("within bucketTTL of its lookup: %s, want the bucket still found", got)
	}
	clk.Advance(time.Millisecond)
	if got := head("bkt"); got != "NoSuchBucket" {
		t.Fatalf("bucketTTL after its lookup, a bucket removed by another client: %s, want NoSuchBucket", got)
	}
	f.bucket(t, ctx, "bk2")
	head("bk2")
	if err := f.b.DeleteBucket(ctx, "bk2"); err != nil {
		t.Fatal(err)
	}
	if got := head("bk2"); got != "NoSuchBucket" {
		t.Fatalf("a bucket deleted through the endpoint: %s, want NoSuchBucket at once", got)
	}
}

// TestRecordCacheSeesChanges: a kept record is never answered for an
// object changed since, by this endpoint or behind its back (a write
// through a mount, a record set by another endpoint): the change counter
// of the lookup differs. And a small GET answered from its lookup shows
// the bytes of the latest write.
func TestRecordCacheSeesChanges(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	etag := f.put(t, ctx, "bkt", "k", []byte("one"))
	head := func() *awss3.HeadObjectOutput {
		out, err := f.b.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: ptr("bkt"), Key: ptr("k")})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := deref(head().ETag); got != etag {
		t.Fatalf("HEAD after PUT: ETag %s, want %s", got, etag)
	}
	head() // kept now
	// Another endpoint sets a record (same size and mtime: still valid).
	obj, err := f.b.v.Lookup(context.Background(), vfs.Root, mustBucket(t, f, "bkt"), "k")
	if err != nil {
		t.Fatal(err)
	}
	r := record{ETag: `"other"`, Size: obj.Size, Mtime: obj.Mtime, ContentType: "text/x-other"}
	if _, err := f.b.writeRecord(context.Background(), caller{}, obj.Ino, obj, r); err != nil {
		t.Fatal(err)
	}
	if out := head(); deref(out.ETag) != `"other"` || deref(out.ContentType) != "text/x-other" {
		t.Fatalf("HEAD after the record changed: ETag %s type %s, want the new record's", deref(out.ETag), deref(out.ContentType))
	}
	// A write through a mount (vfs here): the record no longer matches.
	o, err := f.b.v.OpenFile(context.Background(), vfs.Root, obj.Ino, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.File.Write(context.Background(), 0, []byte("TWO!")); err != nil {
		t.Fatal(err)
	}
	if err := f.b.v.Release(context.Background(), o.Fh); err != nil {
		t.Fatal(err)
	}
	if got := deref(head().ETag); got == etag || got == `"other"` {
		t.Fatalf("HEAD after a write through a mount: ETag %s, want one derived from the new attributes", got)
	}
	if got := string(f.get(t, ctx, "bkt", "k")); got != "TWO!" {
		t.Fatalf("GET after a write through a mount: %q, want %q", got, "TWO!")
	}
}

func mustBucket(t *testing.T, f *fixture, name string) meta.Ino {
	t.Helper()
	in, err := f.b.v.Lookup(context.Background(), vfs.Root, meta.RootIno, name)
	if err != nil {
		t.Fatal(err)
	}
	return in.Ino
}
