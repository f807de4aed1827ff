package s3

import (
	"context"
	"syscall"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// TestAbandonedUploadsExpire: an upload neither completed nor aborted is
// removed with its parts once it is older than the expiry (on the
// backend's clock), by the sweep, in a bucket of the serving root and in
// one of a confined key's root; a younger one stays.
func TestAbandonedUploadsExpire(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	f := newFixtureWith(t, Config{Clock: clk, UploadExpiry: time.Hour})
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	if _, err := f.b.v.Create(context.Background(), vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "proj", Mode: syscall.S_IFDIR | 0o755}); err != nil {
		t.Fatal(err)
	}
	confined := f.key(t, "bob", RoleRW, "/proj")
	f.bucket(t, confined, "pbk")
	old, _ := f.upload(t, ctx, "bkt", "old", randData(21, 100<<10))
	oldConfined, _ := f.upload(t, confined, "pbk", "old", randData(22, 100<<10))
	clk.Advance(50 * time.Minute)
	young, _ := f.upload(t, ctx, "bkt", "young", randData(23, 100<<10))
	clk.Advance(10*time.Minute + time.Second)
	n, err := f.b.ExpireUploads(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("sweep removed %d uploads (%v), want the 2 older than an hour", n, err)
	}
	listParts := func(ctx context.Context, bucket, key, id string) error {
		_, err := f.b.ListParts(ctx, &awss3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &id})
		return err
	}
	for _, tc := range []struct {
		ctx             context.Context
		bucket, key, id string
	}{{ctx, "bkt", "old", old}, {confined, "pbk", "old", oldConfined}} {
		if err := listParts(tc.ctx, tc.bucket, tc.key, tc.id); err == nil || asAPIError(err).Code != "NoSuchUpload" {
			t.Errorf("%s/%s after its expiry: %v, want NoSuchUpload", tc.bucket, tc.key, err)
		}
	}
	if _, err := f.b.v.Resolve(context.Background(), vfs.Root, meta.RootIno, "/bkt/"+uploadsDir+"/"+old); err == nil {
		t.Errorf("the expired upload's directory (and its part) is still there")
	}
	if err := listParts(ctx, "bkt", "young", young); err != nil {
		t.Errorf("an upload younger than the expiry: %v", err)
	}
}

// TestUploadSweepRuns: the server's sweep runs on the backend's clock: an
// upload past its expiry is gone after the next sweep, with no request.
func TestUploadSweepRuns(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	f := newFixtureWith(t, Config{Clock: clk, UploadExpiry: time.Hour})
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	id, _ := f.upload(t, ctx, "bkt", "obj", randData(24, 100<<10))
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.b.sweepUploads(sctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitArms := func(n uint64) {
		for i := 0; clk.Arms() < n; i++ {
			if i > 100000 {
				t.Fatalf("the sweep armed its timer %d times, want %d", clk.Arms(), n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	waitArms(1)
	clk.Advance(time.Hour + time.Second) // one sweep past the expiry
	waitArms(2)                          // re-armed: the sweep is over
	if _, err := f.b.v.Resolve(context.Background(), vfs.Root, meta.RootIno, "/bkt/"+uploadsDir+"/"+id); err == nil {
		t.Fatalf("an upload past its expiry outlived a sweep")
	}
}
