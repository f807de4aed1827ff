package s3

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	vgwauth "github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/client"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// fixture is a backend over a real meta service in memory (block size
// 64 KiB) and a client.
type fixture struct {
	b   *Backend
	svc *meta.Service
	st  *blocktest.MemStore
}

const testBlock = 64 << 10

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, Config{})
}

// newFixtureWith is newFixture with a backend configured as cfg (its
// Logger is set here).
func newFixtureWith(t *testing.T, cfg Config) *fixture {
	t.Helper()
	return newFixtureWrapped(t, cfg, nil)
}

// newFixtureWrapped is newFixtureWith whose client reaches the meta
// service through wrap(service), when wrap is not nil.
func newFixtureWrapped(t *testing.T, cfg Config, wrap func(meta.API) meta.API) *fixture {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: testBlock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := blocktest.NewMem()
	var api meta.API = svc
	if wrap != nil {
		api = wrap(svc)
	}
	c, err := client.New(ctx, client.Config{
		Meta:   api,
		Dial:   func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	v := vfs.New(c, vfs.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		v.Close()
		c.Close(context.Background())
	})
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, err := NewBackend(v, NewIAM(svc, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{b: b, svc: svc, st: st}
}

// key adds a key and returns a context signed by it.
func (f *fixture) key(t *testing.T, name, role, root string) context.Context {
	t.Helper()
	k, err := NewKey(NewKeyRequest{Name: name, Role: role, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddKey(context.Background(), f.svc, k); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1029 versitygw keeps the account under this string key
	return context.WithValue(context.Background(), accountKey, vgwauth.Account{Access: k.AccessKeyID, Secret: k.Secret})
}

func (f *fixture) put(t *testing.T, ctx context.Context, bucket, key string, data []byte) string {
	t.Helper()
	n := int64(len(data))
	out, err := f.b.PutObject(ctx, s3response.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: &n})
	if err != nil {
		t.Fatalf("PUT %s/%s: %v", bucket, key, err)
	}
	return out.ETag
}

func (f *fixture) get(t *testing.T, ctx context.Context, bucket, key string) []byte {
	t.Helper()
	out, err := f.b.GetObject(ctx, &awss3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("GET %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GET %s/%s: %v", bucket, key, err)
	}
	return b
}

func (f *fixture) bucket(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := f.b.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &name}, nil); err != nil {
		t.Fatal(err)
	}
}
