package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/s3api/utils"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

func code(err error) string {
	var apiErr interface{ BaseError() s3err.APIError }
	if errors.As(err, &apiErr) {
		return apiErr.BaseError().Code
	}
	var plain s3err.APIError
	if errors.As(err, &plain) {
		return plain.Code
	}
	if err == nil {
		return ""
	}
	return "not an S3 error: " + err.Error()
}

// TestSplitKey: keys are paths; what no path can be is refused with a
// reason, and a trailing slash names a directory.
func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		key   string
		comps []string
		dir   bool
		bad   bool
	}{
		{key: "a", comps: []string{"a"}},
		{key: "a/b/c.txt", comps: []string{"a", "b", "c.txt"}},
		{key: "a/b/", comps: []string{"a", "b"}, dir: true},
		{key: "a//b", bad: true},
		{key: "/a", bad: true},
		{key: "a/./b", bad: true},
		{key: "a/../b", bad: true},
		{key: "..", bad: true},
		{key: "a/\x00", bad: true},
		{key: uploadsDir + "/x", bad: true},
		{key: "d/" + vfs.TmpPrefix + "0123", bad: true},
		{key: strings.Repeat("n", meta.MaxNameLen+1), bad: true},
		{key: strings.Repeat("a/", maxKeyLen/2+1), bad: true},
	} {
		comps, dir, err := splitKey(tc.key)
		if tc.bad {
			if err == nil {
				t.Errorf("key %q: accepted as %q, want refused", tc.key, comps)
			}
			continue
		}
		if err != nil || !slices.Equal(comps, tc.comps) || dir != tc.dir {
			t.Errorf("key %q: %q dir=%v err=%v, want %q dir=%v", tc.key, comps, dir, err, tc.comps, tc.dir)
		}
	}
}

// TestListInKeyOrder: a listing is in key order although directories
// list their entries by name ("a-b" < "a/x" < "a0" as keys), and a
// continuation goes on after the key it names, in pages of any size (a
// page after the first starts its directory reads past the marker: the
// names before "/" in byte order and directories whose keys follow their
// name's neighbours must not be skipped).
func TestListInKeyOrder(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	keys := []string{"a/x", "a-b", "a0", "a/y/z", "b", "a/y-", "a/y.q", "a.", "a!/k", "\u00e9/1", "\u00e9a", "a/y/z0", "a/y/z/"[:5] + "!"}
	for _, k := range keys {
		f.put(t, ctx, "bkt", k, []byte(k))
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	// With the delimiter "/": the top level's keys and common prefixes,
	// in key order.
	var wantTop []string
	for _, k := range want {
		if i := strings.IndexByte(k, '/'); i >= 0 {
			k = k[:i+1]
		}
		if len(wantTop) == 0 || wantTop[len(wantTop)-1] != k {
			wantTop = append(wantTop, k)
		}
	}
	for _, chunk := range []int{1024, 1, 2, 3} {
		f.b.listChunk = chunk // directories read a few entries at a time
		listPages(t, f, ctx, chunk, want)
		var got []string
		var tok *string
		for range 20 {
			res, err := f.b.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: ptr("bkt"), Delimiter: ptr("/"), MaxKeys: ptr(int32(2)), ContinuationToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			var page []string
			for _, o := range res.Contents {
				page = append(page, *o.Key)
			}
			for _, p := range res.CommonPrefixes {
				page = append(page, *p.Prefix)
			}
			slices.Sort(page)
			got = append(got, page...)
			if !*res.IsTruncated {
				break
			}
			tok = res.NextContinuationToken
		}
		if !slices.Equal(got, wantTop) {
			t.Errorf("listing with delimiter / in pages of 2, directories read %d entries at a time: %q, want %q", chunk, got, wantTop)
		}
	}
}

func listPages(t *testing.T, f *fixture, ctx context.Context, chunk int, want []string) {
	t.Helper()
	for _, page := range []int32{1, 2, 3, 1000} {
		var got []string
		var tok *string
		for range 20 {
			res, err := f.b.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: ptr("bkt"), MaxKeys: ptr(page), ContinuationToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Contents {
				got = append(got, *o.Key)
				if o.ETag == nil || *o.ETag == "" {
					t.Errorf("%s listed without an ETag", *o.Key)
				}
			}
			if !*res.IsTruncated {
				break
			}
			tok = res.NextContinuationToken
		}
		if !slices.Equal(got, want) {
			t.Errorf("listing in pages of %d, directories read %d entries at a time: %q, want %q", page, chunk, got, want)
		}
	}
}

// TestPutShortBodyLeavesNothing: a body that ends before its
// Content-Length fails the PUT, and neither the object nor a temporary
// file is left; an object there before stays whole.
func TestPutShortBodyLeavesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	f.put(t, ctx, "bkt", "d/obj", []byte("old"))
	n := int64(1000)
	_, err := f.b.PutObject(ctx, s3response.PutObjectInput{Bucket: ptr("bkt"), Key: ptr("d/obj"), Body: bytes.NewReader(make([]byte, 10)), ContentLength: &n})
	if code(err) != "IncompleteBody" {
		t.Errorf("a short body: %v, want IncompleteBody", err)
	}
	if got := f.get(t, ctx, "bkt", "d/obj"); string(got) != "old" {
		t.Errorf("the object before the failed PUT reads %q", got)
	}
	dir := f.lookup(t, "/bkt/d")
	ents, _, err := f.b.v.ReadDir(context.Background(), vfs.Root, dir.Ino, "", 100, false)
	if err != nil || len(ents) != 1 {
		t.Errorf("entries of bkt/d after a failed PUT: %v (%v), want only obj", ents, err)
	}
}

// TestKeyIdentity: a ro key may read but not change anything; a key
// confined to a root has the directories under it as its buckets and
// reaches nothing else.
func TestKeyIdentity(t *testing.T) {
	f := newFixture(t)
	rw := f.key(t, "alice", RoleRW, "")
	f.bucket(t, rw, "bkt")
	f.put(t, rw, "bkt", "k", []byte("v"))
	ro := f.key(t, "reader", RoleRO, "")
	if got := f.get(t, ro, "bkt", "k"); string(got) != "v" {
		t.Errorf("ro GET: %q", got)
	}
	n := int64(1)
	if _, err := f.b.PutObject(ro, s3response.PutObjectInput{Bucket: ptr("bkt"), Key: ptr("k2"), Body: bytes.NewReader([]byte("x")), ContentLength: &n}); code(err) != "AccessDenied" {
		t.Errorf("ro PUT: %v, want AccessDenied", err)
	}
	if _, err := f.b.DeleteObject(ro, &awss3.DeleteObjectInput{Bucket: ptr("bkt"), Key: ptr("k")}); code(err) != "AccessDenied" {
		t.Errorf("ro DELETE: %v, want AccessDenied", err)
	}
	if err := f.b.CreateBucket(ro, &awss3.CreateBucketInput{Bucket: ptr("other")}, nil); code(err) != "AccessDenied" {
		t.Errorf("ro CreateBucket: %v, want AccessDenied", err)
	}
	f.bucket(t, rw, "proj")
	f.put(t, rw, "proj", "inner/obj", []byte("in"))
	conf := f.key(t, "confined", RoleRW, "/proj")
	bs, err := f.b.ListBuckets(conf, s3response.ListBucketsInput{})
	if err != nil || len(bs.Buckets.Bucket) != 1 || bs.Buckets.Bucket[0].Name != "inner" {
		t.Errorf("buckets of a key confined to /proj: %+v (%v), want [inner]", bs.Buckets.Bucket, err)
	}
	if got := f.get(t, conf, "inner", "obj"); string(got) != "in" {
		t.Errorf("confined GET inner/obj: %q", got)
	}
	if _, err := f.b.GetObject(conf, &awss3.GetObjectInput{Bucket: ptr("bkt"), Key: ptr("k")}); code(err) != "NoSuchBucket" {
		t.Errorf("a confined key's GET outside its root: %v, want NoSuchBucket", err)
	}
	if _, err := RemoveKey(context.Background(), f.svc, "reader"); err != nil {
		t.Fatal(err)
	}
	keys, err := ListKeys(context.Background(), f.svc)
	if err != nil || len(keys) != 2 || keys[0].Name != "alice" || keys[1].Name != "confined" {
		t.Errorf("keys after removing reader: %+v (%v)", keys, err)
	}
}

// TestRemovedKeyStops: a key removed is refused once the endpoint's
// cache of it (keyTTL) has passed, on the IAM's clock.
func TestRemovedKeyStops(t *testing.T) {
	f := newFixture(t)
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	f.b.iam = NewIAM(f.svc, clk)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	if _, err := RemoveKey(context.Background(), f.svc, "alice"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(keyTTL + time.Second)
	if _, err := f.b.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: ptr("bkt")}); code(err) != "AccessDenied" {
		t.Errorf("a removed key after %v: %v, want AccessDenied", keyTTL, err)
	}
}

// TestPutBadDigest: a body whose Content-MD5 does not match (versitygw's
// hash reader fails at its end) is BadDigest, not an internal error, and
// leaves no object.
func TestPutBadDigest(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	data := []byte("the body")
	wrong := base64.StdEncoding.EncodeToString(make([]byte, 16))
	body, err := utils.NewHashReader(bytes.NewReader(data), wrong, utils.HashTypeContentMD5)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	_, err = f.b.PutObject(ctx, s3response.PutObjectInput{Bucket: ptr("bkt"), Key: ptr("obj"), Body: body, ContentLength: &n})
	if c := code(err); c != "BadDigest" {
		t.Errorf("PUT with a wrong Content-MD5: %v (code %q), want BadDigest", err, c)
	}
	if _, err := f.b.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: ptr("bkt"), Key: ptr("obj")}); code(err) != "NoSuchKey" {
		t.Errorf("HEAD after the refused PUT: %v, want NoSuchKey", err)
	}
}

// TestServingRoot: with a serving root (tessera s3 --root), the buckets
// of a key without a root are the directories under it; a key confined
// inside it gets its own root's; a key confined elsewhere is refused.
func TestServingRoot(t *testing.T) {
	f := newFixture(t)
	admin := f.key(t, "admin", RoleRW, "")
	f.bucket(t, admin, "srv")
	f.put(t, admin, "srv", "bk1/k", []byte("1"))
	f.put(t, admin, "srv", "p/bk2/k", []byte("2"))
	f.bucket(t, admin, "other")
	b, err := NewBackend(f.b.v, f.b.iam, Config{Root: "/srv", Logger: f.b.log})
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	plain := f.key(t, "plain", RoleRW, "")
	if got := f.get(t, plain, "bk1", "k"); string(got) != "1" {
		t.Errorf("under --root /srv, bk1/k reads %q", got)
	}
	inner := f.key(t, "inner", RoleRW, "/srv/p")
	if got := f.get(t, inner, "bk2", "k"); string(got) != "2" {
		t.Errorf("a key confined to /srv/p: bk2/k reads %q", got)
	}
	outside := f.key(t, "outside", RoleRW, "/other")
	if _, err := f.b.ListBuckets(outside, s3response.ListBucketsInput{}); code(err) != "AccessDenied" {
		t.Errorf("a key confined outside the serving root: %v, want AccessDenied", err)
	}
	if _, err := NewBackend(f.b.v, f.b.iam, Config{Root: "srv/../x"}); err == nil {
		t.Errorf("a serving root that is no clean absolute path was taken")
	}
}

// TestPutBodyLengths: a body of exactly its Content-Length is stored
// whole, one a byte longer or shorter is refused, for lengths around the
// copy buffer's sizes (0, under and at minCopyBuf, at and past ioChunk);
// and small PUTs copy through buffers of about their size, not ioChunk
// each (20 PUTs of 4 KiB allocated over 20 MiB before).
func TestPutBodyLengths(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	for _, n := range []int64{0, 1, minCopyBuf - 1, minCopyBuf, minCopyBuf + 1, ioChunk - 1, ioChunk, ioChunk + 1} {
		data := randBytes(n)
		f.put(t, ctx, "bkt", "k", data)
		if got := f.get(t, ctx, "bkt", "k"); !bytes.Equal(got, data) {
			t.Errorf("a PUT of %d bytes reads back %d bytes that differ", n, len(got))
		}
		for _, body := range [][]byte{append(slices.Clone(data), 'x'), data[:max(n-1, 0)]} {
			if int64(len(body)) == n {
				continue // no shorter body than nothing
			}
			_, err := f.b.PutObject(ctx, s3response.PutObjectInput{Bucket: ptr("bkt"), Key: ptr("k"), Body: bytes.NewReader(body), ContentLength: &n})
			if c := code(err); c != "IncompleteBody" && c != "ContentLengthMismatch" {
				t.Errorf("a body of %d bytes for a Content-Length of %d: %v, want it refused", len(body), n, err)
			}
		}
		if got := f.get(t, ctx, "bkt", "k"); !bytes.Equal(got, data) {
			t.Errorf("after refused PUTs, the %d-byte object reads back %d bytes that differ", n, len(got))
		}
	}
	small := make([]byte, 4096)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 20 {
		f.put(t, ctx, "bkt", "s"+strconv.Itoa(i), small)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 10<<20 {
		t.Errorf("20 PUTs of 4 KiB allocated %d MiB, want under 10 (a buffer of about the body each)", got>>20)
	}
}

func randBytes(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// TestGetWriteTo: a GET's body sent through WriteTo (as the HTTP server
// sends it) gives the object's bytes, whole and ranged across blocks and
// chunks; and the bytes are those Read gives.
func TestGetWriteTo(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	data := make([]byte, ioChunk+3*testBlock+123)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	f.put(t, ctx, "bkt", "k", data)
	// A small object's GET is answered from its lookup (inline content):
	// ranges too.
	f.put(t, ctx, "bkt", "small", data[:100])
	r := "bytes=10-19"
	out, err := f.b.GetObject(ctx, &awss3.GetObjectInput{Bucket: ptr("bkt"), Key: ptr("small"), Range: &r})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	if !bytes.Equal(got, data[10:20]) || *out.ContentLength != 10 || deref(out.ContentRange) != "bytes 10-19/100" {
		t.Fatalf("ranged GET of a small object: %d bytes, length %d, range %q", len(got), *out.ContentLength, deref(out.ContentRange))
	}
	for _, rg := range []struct{ from, to int }{{0, len(data) - 1}, {1, 2}, {testBlock - 5, ioChunk + testBlock + 7}, {len(data) - 10, len(data) - 1}} {
		r := fmt.Sprintf("bytes=%d-%d", rg.from, rg.to)
		out, err := f.b.GetObject(ctx, &awss3.GetObjectInput{Bucket: ptr("bkt"), Key: ptr("k"), Range: &r})
		if err != nil {
			t.Fatal(err)
		}
		wt, ok := out.Body.(io.WriterTo)
		if !ok {
			t.Fatalf("GET body %T has no WriteTo", out.Body)
		}
		var got bytes.Buffer
		n, err := wt.WriteTo(&got)
		out.Body.Close()
		if err != nil || n != int64(rg.to-rg.from+1) || !bytes.Equal(got.Bytes(), data[rg.from:rg.to+1]) {
			t.Fatalf("%s: WriteTo wrote %d bytes (err %v), want %d and the object's bytes", r, n, err, rg.to-rg.from+1)
		}
	}
}
