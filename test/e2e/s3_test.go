package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tessera/test/cluster"
)

// freePort returns a loopback address no one listens on now, below the
// ephemeral port range (the S3 endpoint binds by address, so it is chosen
// here; an ephemeral one could go to one of tessera up's own :0 binds
// first).
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := cluster.FixedPortAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

type s3Key struct {
	ID     string `json:"access_key_id"`
	Secret string `json:"secret_access_key"`
}

// s3KeyAdd runs `tessera s3 keys add NAME ARGS... --json` on c.
func s3KeyAdd(t *testing.T, c *cluster.Cluster, name string, args ...string) s3Key {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, c.Opts().Bin, append([]string{"s3", "keys", "add", name, "--json", "--data", c.DataDir()}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var k s3Key
	if res.ExitCode != 0 || json.Unmarshal([]byte(res.Stdout), &k) != nil || k.ID == "" || k.Secret == "" {
		t.Fatalf("s3 keys add %s: exit %d, stdout %q, stderr %q", name, res.ExitCode, res.Stdout, res.Stderr)
	}
	return k
}

func s3Client(t *testing.T, addr string, k s3Key) *minio.Client {
	t.Helper()
	mc, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(k.ID, k.Secret, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// s3Why is err with its S3 error code and, for a signature refused, the
// endpoint's log of it (the canonical request it computed, the key id, the
// request's date and its own clock; internal/s3's logSignatureMismatch).
func s3Why(c *cluster.Cluster, err error) string {
	e := minio.ToErrorResponse(err)
	msg := fmt.Sprintf("%v (code %q, status %d, request id %q)", err, e.Code, e.StatusCode, e.RequestID)
	if e.Code != "SignatureDoesNotMatch" {
		return msg
	}
	var lines []string
	for _, l := range strings.Split(c.LogTail(64<<10), "\n") {
		if strings.Contains(l, "signature does not match") {
			lines = append(lines, l)
		}
	}
	return msg + "; the endpoint logged:\n" + strings.Join(lines, "\n")
}

// s3Status is the HTTP status of an S3 error (0 for none).
func s3Status(err error) int {
	if err == nil {
		return 0
	}
	return minio.ToErrorResponse(err).StatusCode
}

func s3Get(t *testing.T, mc *minio.Client, bucket, key string, opts minio.GetObjectOptions) []byte {
	t.Helper()
	o, err := mc.GetObject(context.Background(), bucket, key, opts)
	if err != nil {
		t.Fatalf("GET %s/%s: %v", bucket, key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("GET %s/%s: %v", bucket, key, err)
	}
	return b
}

func s3Put(t *testing.T, mc *minio.Client, bucket, key string, data []byte, opts minio.PutObjectOptions) minio.UploadInfo {
	t.Helper()
	info, err := mc.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("PUT %s/%s: %v", bucket, key, err)
	}
	return info
}

// TestS3BesideFUSE serves `tessera up --s3` and drives it with minio-go:
// objects, ranges, conditionals, listings with delimiters and
// continuation, multipart, copy, deletes, and what keys may do; objects
// PUT over S3 are files on the FUSE mount, byte for byte, and files
// written on the mount are objects.
func TestS3BesideFUSE(t *testing.T) {
	addr := freePort(t)
	c := startCluster(t, withArgs("--s3", addr))
	if got := c.Field("s3"); got != addr {
		t.Fatalf("tessera up's ready line says s3=%q, want %q", got, addr)
	}
	rw := s3KeyAdd(t, c, "alice", "--role", "rw")
	mc := s3Client(t, addr, rw)
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "bkt", minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket: %v", err)
	}
	mnt := c.Mount()

	t.Run("put get head", func(t *testing.T) {
		data := randBytes(1, 300_000)
		info := s3Put(t, mc, "bkt", "d/small.bin", data, minio.PutObjectOptions{ContentType: "application/x-test", UserMetadata: map[string]string{"color": "blue"}, SendContentMd5: true})
		sum := md5.Sum(data)
		if info.ETag != hex.EncodeToString(sum[:]) {
			t.Errorf("PUT ETag %q, want the MD5 %x", info.ETag, sum)
		}
		if got := s3Get(t, mc, "bkt", "d/small.bin", minio.GetObjectOptions{}); !bytes.Equal(got, data) {
			t.Errorf("GET gave %d bytes that differ from the %d PUT", len(got), len(data))
		}
		onMount, err := os.ReadFile(filepath.Join(mnt, "bkt", "d", "small.bin"))
		if err != nil || !bytes.Equal(onMount, data) {
			t.Errorf("the FUSE mount's bkt/d/small.bin differs from the PUT (err %v)", err)
		}
		st, err := mc.StatObject(ctx, "bkt", "d/small.bin", minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Size != int64(len(data)) || st.ETag != info.ETag || st.ContentType != "application/x-test" || st.UserMetadata["Color"] != "blue" {
			t.Errorf("HEAD: size %d etag %q type %q metadata %v", st.Size, st.ETag, st.ContentType, st.UserMetadata)
		}
		var ro minio.GetObjectOptions
		ro.SetRange(1000, 1999)
		if got := s3Get(t, mc, "bkt", "d/small.bin", ro); !bytes.Equal(got, data[1000:2000]) {
			t.Errorf("ranged GET 1000-1999 gave %d bytes that differ", len(got))
		}
		var cond minio.GetObjectOptions
		cond.SetMatchETag("0123456789abcdef0123456789abcdef")
		o, err := mc.GetObject(ctx, "bkt", "d/small.bin", cond)
		if err == nil {
			_, err = io.ReadAll(o)
			o.Close()
		}
		if s3Status(err) != http.StatusPreconditionFailed {
			t.Errorf("GET If-Match of another ETag: %v, want 412", err)
		}
	})

	t.Run("written on the mount", func(t *testing.T) {
		data := randBytes(2, 5<<20+17)
		if err := os.MkdirAll(filepath.Join(mnt, "bkt", "fuse"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mnt, "bkt", "fuse", "f.bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := s3Get(t, mc, "bkt", "fuse/f.bin", minio.GetObjectOptions{}); !bytes.Equal(got, data) {
			t.Errorf("GET of a file written on the mount: %d bytes that differ from the %d written", len(got), len(data))
		}
	})

	t.Run("object and prefix", func(t *testing.T) {
		s3Put(t, mc, "bkt", "x/file", []byte("f"), minio.PutObjectOptions{})
		_, err := mc.PutObject(ctx, "bkt", "x/file/under", bytes.NewReader([]byte("u")), 1, minio.PutObjectOptions{})
		if s3Status(err) != http.StatusConflict {
			t.Errorf("PUT under an object: %v, want 409 (ObjectParentIsFile)", err)
		}
		_, err = mc.PutObject(ctx, "bkt", "x", bytes.NewReader([]byte("d")), 1, minio.PutObjectOptions{})
		if s3Status(err) != http.StatusConflict {
			t.Errorf("PUT over a prefix: %v, want 409 (ExistingObjectIsDirectory)", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		var want []string
		for i := range 23 {
			k := fmt.Sprintf("l/%c/%02d", 'a'+i%3, i)
			want = append(want, k)
			s3Put(t, mc, "bkt", k, []byte(k), minio.PutObjectOptions{})
		}
		want = append(want, "l/a-top", "l/z")
		s3Put(t, mc, "bkt", "l/a-top", []byte("t"), minio.PutObjectOptions{})
		s3Put(t, mc, "bkt", "l/z", []byte("z"), minio.PutObjectOptions{})
		slices.Sort(want)
		var got []string
		for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Prefix: "l/", Recursive: true, MaxKeys: 4}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			got = append(got, o.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("recursive listing in pages of 4:\n got %v\nwant %v", got, want)
		}
		got = nil
		for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Prefix: "l/", MaxKeys: 2}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			got = append(got, o.Key)
		}
		if w := []string{"l/a-top", "l/a/", "l/b/", "l/c/", "l/z"}; !slices.Equal(got, w) {
			t.Errorf("listing with delimiter / in pages of 2: got %v, want %v", got, w)
		}
		got = nil
		for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Prefix: "l/b/", Recursive: true, StartAfter: "l/b/10"}) {
			got = append(got, o.Key)
		}
		if w := []string{"l/b/13", "l/b/16", "l/b/19", "l/b/22"}; !slices.Equal(got, w) {
			t.Errorf("listing after l/b/10: got %v, want %v", got, w)
		}
		got = nil
		for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Prefix: "l/", Recursive: true, UseV1: true, MaxKeys: 5}) {
			got = append(got, o.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListObjects (v1) in pages of 5: got %d keys, want %d", len(got), len(want))
		}
	})

	t.Run("multipart and copy", func(t *testing.T) {
		data := randBytes(3, 20<<20+5)
		mark := c.LogMark()
		info, err := mc.PutObject(ctx, "bkt", "mp/big.bin", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{PartSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.ETag, "-3") {
			t.Errorf("a 3-part upload's ETag %q lacks -3", info.ETag)
		}
		if got := s3Get(t, mc, "bkt", "mp/big.bin", minio.GetObjectOptions{}); !bytes.Equal(got, data) {
			t.Errorf("GET of the multipart object: %d bytes that differ from the %d sent", len(got), len(data))
		}
		onMount, err := os.ReadFile(filepath.Join(mnt, "bkt", "mp", "big.bin"))
		if err != nil || !bytes.Equal(onMount, data) {
			t.Errorf("the multipart object on the FUSE mount differs (err %v)", err)
		}
		if ents, _ := os.ReadDir(filepath.Join(mnt, "bkt", ".tessera-s3-uploads")); len(ents) != 0 {
			t.Errorf("uploads left after complete: %v", ents)
		}
		// Parts of whole 4 MiB blocks: complete commits their blocks, no
		// byte is copied.
		if log := c.LogSince(mark); !strings.Contains(log, "parts=3 shared_bytes=20971525 copied_bytes=0") {
			t.Errorf("the complete of 8 MiB parts copied data or was not logged:\n%s", log)
		}
		// 5 MiB parts are no multiple of 4 MiB blocks: they are written
		// in blocks of their own size, so their blocks are shared too.
		mark = c.LogMark()
		odd := randBytes(4, 11<<20+3)
		if _, err := mc.PutObject(ctx, "bkt", "mp/odd.bin", bytes.NewReader(odd), int64(len(odd)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
			t.Fatal(err)
		}
		if got := s3Get(t, mc, "bkt", "mp/odd.bin", minio.GetObjectOptions{}); !bytes.Equal(got, odd) {
			t.Errorf("GET of the 5 MiB-part object differs")
		}
		if log := c.LogSince(mark); !strings.Contains(log, "parts=3 shared_bytes=11534339 copied_bytes=0") {
			t.Errorf("the complete of 5 MiB parts copied data or was not logged:\n%s", log)
		}
		if _, err := mc.CopyObject(ctx, minio.CopyDestOptions{Bucket: "bkt", Object: "cp/copy.bin"}, minio.CopySrcOptions{Bucket: "bkt", Object: "mp/big.bin"}); err != nil {
			t.Fatal(err)
		}
		if got := s3Get(t, mc, "bkt", "cp/copy.bin", minio.GetObjectOptions{}); !bytes.Equal(got, data) {
			t.Errorf("GET of the copy differs from its source")
		}
	})

	t.Run("delete", func(t *testing.T) {
		s3Put(t, mc, "bkt", "del/one/a", []byte("a"), minio.PutObjectOptions{})
		if err := mc.RemoveObject(ctx, "bkt", "del/one/a", minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := mc.StatObject(ctx, "bkt", "del/one/a", minio.StatObjectOptions{}); s3Status(err) != http.StatusNotFound {
			t.Errorf("HEAD after DELETE: %v, want 404", err)
		}
		if _, err := os.Stat(filepath.Join(mnt, "bkt", "del")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the prefix del/ outlived its last key: %v", err)
		}
		ch := make(chan minio.ObjectInfo, 3)
		for _, k := range []string{"l/z", "l/a-top", "l/none"} {
			ch <- minio.ObjectInfo{Key: k}
		}
		close(ch)
		for e := range mc.RemoveObjects(ctx, "bkt", ch, minio.RemoveObjectsOptions{}) {
			t.Errorf("DeleteObjects %s: %v", e.ObjectName, e.Err)
		}
		if _, err := os.Stat(filepath.Join(mnt, "bkt", "l", "z")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("l/z outlived DeleteObjects: %v", err)
		}
	})

	t.Run("keys", func(t *testing.T) {
		// The last character changed: to "x", or "y" when it is "x"
		// already (1 secret in 64: the "wrong" secret was the right one).
		last := "x"
		if strings.HasSuffix(rw.Secret, "x") {
			last = "y"
		}
		bad := s3Client(t, addr, s3Key{ID: rw.ID, Secret: rw.Secret[:len(rw.Secret)-1] + last})
		if _, err := bad.StatObject(ctx, "bkt", "d/small.bin", minio.StatObjectOptions{}); s3Status(err) != http.StatusForbidden {
			t.Errorf("a wrong secret: %s, want 403", s3Why(c, err))
		}
		ro := s3Client(t, addr, s3KeyAdd(t, c, "reader", "--role", "ro"))
		if _, err := ro.PutObject(ctx, "bkt", "ro.txt", bytes.NewReader([]byte("no")), 2, minio.PutObjectOptions{}); minio.ToErrorResponse(err).Code != "AccessDenied" {
			t.Errorf("PUT with a ro key: %s, want 403 AccessDenied", s3Why(c, err))
		}
		if got := s3Get(t, ro, "bkt", "x/file", minio.GetObjectOptions{}); string(got) != "f" {
			t.Errorf("GET with a ro key: %q", got)
		}
		if err := os.MkdirAll(filepath.Join(mnt, "proj", "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		conf := s3Client(t, addr, s3KeyAdd(t, c, "confined", "--role", "rw", "--root", "/proj"))
		bs, err := conf.ListBuckets(ctx)
		if err != nil {
			t.Fatalf("ListBuckets with the key confined to /proj: %s", s3Why(c, err))
		}
		if len(bs) != 1 || bs[0].Name != "inner" {
			t.Errorf("a key confined to /proj lists buckets %v, want [inner]", bs)
		}
		if _, err := conf.StatObject(ctx, "bkt", "x/file", minio.StatObjectOptions{}); s3Status(err) != http.StatusNotFound {
			t.Errorf("a key confined to /proj reached bkt/x/file: %s, want 404 (no such bucket)", s3Why(c, err))
		}
		s3Put(t, conf, "inner", "k", []byte("in"), minio.PutObjectOptions{})
		if b, err := os.ReadFile(filepath.Join(mnt, "proj", "inner", "k")); err != nil || string(b) != "in" {
			t.Errorf("a confined key's PUT of inner/k is not /proj/inner/k on the mount: %q, %v", b, err)
		}
		if names := s3KeyNames(t, c); !slices.Equal(names, []string{"alice", "confined", "reader"}) {
			t.Errorf("s3 keys list: %v", names)
		}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if res, err := cluster.RunBin(rctx, c.Opts().Bin, "s3", "keys", "remove", "reader", "--data", c.DataDir()); err != nil || res.ExitCode != 0 {
			t.Fatalf("s3 keys remove reader: %v %+v", err, res)
		}
		if names := s3KeyNames(t, c); !slices.Equal(names, []string{"alice", "confined"}) {
			t.Errorf("s3 keys list after removing reader: %v", names)
		}
		if res, _ := cluster.RunBin(rctx, c.Opts().Bin, "s3", "keys", "add", "alice", "--role", "rw", "--data", c.DataDir()); res.ExitCode == 0 || !strings.Contains(res.Stderr, "exists already") {
			t.Errorf("a second key named alice: exit %d, stderr %q; want refused", res.ExitCode, res.Stderr)
		}
		if res, _ := cluster.RunBin(rctx, c.Opts().Bin, "s3", "keys", "add", "x", "--role", "admin", "--data", c.DataDir()); res.ExitCode == 0 || !strings.Contains(res.Stderr, "want rw or ro") {
			t.Errorf("a key with role admin: exit %d, stderr %q; want refused", res.ExitCode, res.Stderr)
		}
	})
}

// s3KeyNames runs `tessera s3 keys list --json` on c and returns the names.
func s3KeyNames(t *testing.T, c *cluster.Cluster) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, c.Opts().Bin, "s3", "keys", "list", "--json", "--data", c.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct{ Name, AccessKeyID string }
	if res.ExitCode != 0 || json.Unmarshal([]byte(res.Stdout), &rows) != nil {
		t.Fatalf("s3 keys list: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	var names []string
	for _, r := range rows {
		if r.AccessKeyID == "" || strings.Contains(res.Stdout, "secret") {
			t.Errorf("s3 keys list shows %+v (a secret or no id)", r)
		}
		names = append(names, r.Name)
	}
	return names
}
