package s3

import (
	"context"
	"testing"
	"time"
	"unsafe"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"tessera/internal/clock"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestKeyCacheKeepsNoRequestBytes: versitygw hands the IAM an access key
// id that is a view of the request's header buffer (fiber's zero-copy
// strings), and fasthttp reuses that buffer for a later request. A cache
// keyed by that string had its key rewritten in place by the next request
// on the buffer: the next key's first request was answered with the
// previous key's secret ("signature does not match", TestS3BesideFUSE/keys
// in CI), and the previous key was looked up again. Here the buffer is
// rewritten by hand, as fasthttp would.
func TestKeyCacheKeepsNoRequestBytes(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cnt := &counting{API: svc, n: map[string]int{}}
	var keys [2]Key
	for i, name := range []string{"reader", "confined"} {
		if keys[i], err = NewKey(NewKeyRequest{Name: name, Role: RoleRW}); err != nil {
			t.Fatal(err)
		}
		if err := AddKey(ctx, svc, keys[i]); err != nil {
			t.Fatal(err)
		}
	}
	a, b := keys[0], keys[1]
	if len(a.AccessKeyID) != len(b.AccessKeyID) {
		t.Fatalf("access key ids of %d and %d bytes: the test needs equal lengths", len(a.AccessKeyID), len(b.AccessKeyID))
	}
	// Each IAM's map hashes with a seed of its own: a rewritten entry
	// answers the other id only when their hashes meet in its slot, about
	// one map in 128, so many maps are tried.
	wrong := 0
	for range 2000 {
		iam := NewIAM(svc, clock.NewFake(time.Unix(1_000_000, 0)))
		header := []byte(a.AccessKeyID) // the request's buffer
		if acc, err := iam.GetUserAccount(unsafe.String(&header[0], len(header))); err != nil || acc.Secret != a.Secret {
			t.Fatalf("first lookup of %s: %v (right secret: %v)", a.Name, err, acc.Secret == a.Secret)
		}
		copy(header, b.AccessKeyID) // the next request on the same buffer
		acc, err := iam.GetUserAccount(b.AccessKeyID)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Secret != b.Secret {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("the first request of key %s was given another key's secret in %d of 2000 caches (an entry rewritten by the request buffer's reuse)", b.Name, wrong)
	}

	iam := NewIAM(cnt, clock.NewFake(time.Unix(1_000_000, 0)))
	header := []byte(a.AccessKeyID)
	if _, err := iam.GetUserAccount(unsafe.String(&header[0], len(header))); err != nil {
		t.Fatal(err)
	}
	copy(header, b.AccessKeyID)
	cnt.take()
	if acc, err := iam.GetUserAccount(a.AccessKeyID); err != nil || acc.Secret != a.Secret {
		t.Errorf("lookup of %s again: %v (right secret: %v)", a.Name, err, acc.Secret == a.Secret)
	}
	if got := cnt.take(); got != "" {
		t.Errorf("lookup of key %s within keyTTL after its request's buffer was reused: meta calls %q, want none (cached)", a.Name, got)
	}
}

// TestBucketCacheKeepsNoRequestBytes: a bucket name is a view of the
// request's buffer too (fiber's path parameters); the bucket cache keeps
// a copy, so a later request on the buffer neither makes the cached
// bucket unfindable nor gives it another bucket's name.
func TestBucketCacheKeepsNoRequestBytes(t *testing.T) {
	cnt := &counting{n: map[string]int{}}
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	f := newFixtureWrapped(t, Config{Clock: clk}, func(a meta.API) meta.API { cnt.API = a; return cnt })
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	f.bucket(t, ctx, "bk2")
	path := []byte("bkt") // the request's buffer
	name := unsafe.String(&path[0], len(path))
	if _, err := f.b.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &name}); err != nil {
		t.Fatal(err)
	}
	copy(path, "bk2") // the next request on the same buffer
	cnt.take()
	if _, err := f.b.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: ptr("bkt")}); err != nil {
		t.Fatal(err)
	}
	if got := cnt.take(); got != "" {
		t.Errorf("HEAD of bucket bkt within bucketTTL after its request's buffer was reused: meta calls %q, want none (cached)", got)
	}
}
