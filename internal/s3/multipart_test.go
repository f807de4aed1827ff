package s3

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

func randData(seed uint64, n int) []byte {
	b := make([]byte, n)
	var s [32]byte
	s[0] = byte(seed)
	rand.NewChaCha8(s).Read(b)
	return b
}

// upload starts an upload of key and sends parts; it returns the id and
// the parts' ETags.
func (f *fixture) upload(t *testing.T, ctx context.Context, bucket, key string, parts ...[]byte) (string, []string) {
	t.Helper()
	res, err := f.b.CreateMultipartUpload(ctx, s3response.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	var etags []string
	for i, p := range parts {
		n, size := int32(i+1), int64(len(p))
		out, err := f.b.UploadPart(ctx, &awss3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: &res.UploadId, PartNumber: &n, Body: bytes.NewReader(p), ContentLength: &size})
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		etags = append(etags, *out.ETag)
	}
	return res.UploadId, etags
}

func completed(nums []int32, etags []string) *types.CompletedMultipartUpload {
	var ps []types.CompletedPart
	for i, n := range nums {
		ps = append(ps, types.CompletedPart{PartNumber: ptr(n), ETag: ptr(etags[i])})
	}
	return &types.CompletedMultipartUpload{Parts: ps}
}

func recipe(t *testing.T, svc *meta.Service, ino meta.Ino) []block.Hash {
	t.Helper()
	in, err := svc.GetAttr(context.Background(), ino)
	if err != nil {
		t.Fatal(err)
	}
	var out []block.Hash
	for {
		r, err := svc.GetRecipe(context.Background(), ino, uint64(len(out)), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Blocks) == 0 {
			break
		}
		out = append(out, r.Blocks...)
		if uint64(len(out))*uint64(in.BlockSize) >= in.Size {
			break
		}
	}
	return out
}

func (f *fixture) lookup(t *testing.T, path string) meta.Inode {
	t.Helper()
	in, err := f.b.v.Resolve(context.Background(), vfs.Root, meta.RootIno, path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return in
}

// TestCompleteSharesPartBlocks: parts of whole blocks become the object
// by one commit of their block hashes: no block is uploaded during the
// complete, the object's recipe is the parts' recipes end to end, and
// the bytes read back are the parts'. The ETag is md5 of the parts' MD5s
// with -N.
func TestCompleteSharesPartBlocks(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	// The last part is past meta.InlineMax: kept in blocks, not inline.
	p1, p2, p3 := randData(1, MinPartSize), randData(2, MinPartSize+testBlock), randData(3, 2*testBlock+1000)
	id, etags := f.upload(t, ctx, "bkt", "dir/obj", p1, p2, p3)
	var partHashes []block.Hash
	for _, n := range []string{"00001", "00002", "00003"} {
		partHashes = append(partHashes, recipe(t, f.svc, f.lookup(t, "/bkt/"+uploadsDir+"/"+id+"/"+n).Ino)...)
	}
	puts := f.st.Puts()
	res, _, err := f.b.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: ptr("bkt"), Key: ptr("dir/obj"), UploadId: &id, MultipartUpload: completed([]int32{1, 2, 3}, etags)})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.st.Puts() - puts; n != 0 {
		t.Errorf("the complete uploaded %d blocks; want none (the parts' blocks are shared)", n)
	}
	obj := f.lookup(t, "/bkt/dir/obj")
	if got := recipe(t, f.svc, obj.Ino); !slices.Equal(got, partHashes) {
		t.Errorf("the object's recipe (%d blocks) is not the parts' (%d blocks) end to end", len(got), len(partHashes))
	}
	want := slices.Concat(p1, p2, p3)
	if got := f.get(t, ctx, "bkt", "dir/obj"); !bytes.Equal(got, want) {
		t.Errorf("GET after complete: %d bytes that differ from the %d sent", len(got), len(want))
	}
	if !strings.HasSuffix(*res.ETag, `-3"`) || len(*res.ETag) != 2+32+2 {
		t.Errorf("ETag %s: want \"<md5 of the parts' MD5s>-3\"", *res.ETag)
	}
	if _, err := f.b.v.Resolve(context.Background(), vfs.Root, meta.RootIno, "/bkt/"+uploadsDir); err == nil {
		t.Errorf("the uploads directory outlived its last upload")
	}
}

// TestCompleteRefusesBadParts: parts out of order, missing, with another
// ETag or too small are refused before anything is made, and the upload
// stays for a correct complete.
func TestCompleteRefusesBadParts(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	small := randData(4, 100)
	id, etags := f.upload(t, ctx, "bkt", "obj", randData(5, MinPartSize), small, randData(6, 10))
	in := func(mp *types.CompletedMultipartUpload) *awss3.CompleteMultipartUploadInput {
		return &awss3.CompleteMultipartUploadInput{Bucket: ptr("bkt"), Key: ptr("obj"), UploadId: &id, MultipartUpload: mp}
	}
	for _, tc := range []struct {
		name string
		mp   *types.CompletedMultipartUpload
		code string
	}{
		{"out of order", completed([]int32{2, 1}, []string{etags[1], etags[0]}), "InvalidPartOrder"},
		{"repeated", completed([]int32{1, 1}, []string{etags[0], etags[0]}), "InvalidPartOrder"},
		{"missing", completed([]int32{1, 4}, []string{etags[0], etags[1]}), "InvalidPart"},
		{"another etag", completed([]int32{1, 2}, []string{etags[0], etags[2]}), "InvalidPart"},
		{"too small", completed([]int32{2, 3}, []string{etags[1], etags[2]}), "EntityTooSmall"},
		{"no parts", &types.CompletedMultipartUpload{}, "MalformedXML"},
	} {
		_, _, err := f.b.CompleteMultipartUpload(ctx, in(tc.mp))
		var apiErr interface{ BaseError() s3err.APIError }
		if !errors.As(err, &apiErr) || apiErr.BaseError().Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if _, err := f.b.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: ptr("bkt"), Key: ptr("obj")}); err == nil {
		t.Errorf("a refused complete left an object")
	}
	if _, _, err := f.b.CompleteMultipartUpload(ctx, in(completed([]int32{1, 3}, []string{etags[0], etags[2]}))); err != nil {
		t.Fatalf("the upload did not survive the refused completes: %v", err)
	}
}

// TestCopySharesBlocks: CopyObject commits the source's block hashes: no
// block is uploaded, and the copy reads as its source.
func TestCopySharesBlocks(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	data := randData(7, 3*testBlock+5)
	etag := f.put(t, ctx, "bkt", "src", data)
	puts := f.st.Puts()
	out, err := f.b.CopyObject(ctx, s3response.CopyObjectInput{Bucket: ptr("bkt"), Key: ptr("a/copy"), CopySource: ptr("bkt/src")})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.st.Puts() - puts; n != 0 {
		t.Errorf("the copy uploaded %d blocks; want none", n)
	}
	if *out.CopyObjectResult.ETag != etag {
		t.Errorf("copy ETag %s, want the source's %s", *out.CopyObjectResult.ETag, etag)
	}
	if got := f.get(t, ctx, "bkt", "a/copy"); !bytes.Equal(got, data) {
		t.Errorf("the copy reads %d bytes that differ from its source", len(got))
	}
}

// TestCompleteSharesOddSizedParts: parts of 5 MiB + 1 byte (no multiple of
// the block size) are written in blocks that divide them, so the complete
// uploads no block whatever the last part's size, and the object reads
// back; a copy of it shares its blocks too. (A last part of at most
// meta.InlineMax is kept inline, and is uploaded as a block at the
// complete.) A last part sent before part
// 1 is still right (copied if need be).
func TestCompleteSharesOddSizedParts(t *testing.T) {
	f := newFixture(t)
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	const p = MinPartSize + 1
	for _, tc := range []struct {
		name string
		last int
	}{{"equal parts", p}, {"a short last part", 1<<20 + 7}, {"a last part of 100 KiB", 100 << 10}} {
		parts := [][]byte{randData(11, p), randData(12, p), randData(13, tc.last)}
		id, etags := f.upload(t, ctx, "bkt", "odd", parts...)
		puts := f.st.Puts()
		if _, _, err := f.b.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
			Bucket: ptr("bkt"), Key: ptr("odd"), UploadId: &id, MultipartUpload: completed([]int32{1, 2, 3}, etags)}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := f.st.Puts() - puts; n != 0 {
			t.Errorf("%s: the complete uploaded %d blocks; want none", tc.name, n)
		}
		want := slices.Concat(parts...)
		if got := f.get(t, ctx, "bkt", "odd"); !bytes.Equal(got, want) {
			t.Errorf("%s: GET after complete: %d bytes that differ from the %d sent", tc.name, len(got), len(want))
		}
	}
	puts := f.st.Puts()
	if _, err := f.b.CopyObject(ctx, s3response.CopyObjectInput{Bucket: ptr("bkt"), Key: ptr("odd-copy"), CopySource: ptr("bkt/odd")}); err != nil {
		t.Fatal(err)
	}
	if n := f.st.Puts() - puts; n != 0 {
		t.Errorf("the copy of a multipart object uploaded %d blocks; want none", n)
	}

	// The last part first: right, whatever it costs.
	res, err := f.b.CreateMultipartUpload(ctx, s3response.CreateMultipartUploadInput{Bucket: ptr("bkt"), Key: ptr("rev")})
	if err != nil {
		t.Fatal(err)
	}
	parts := [][]byte{randData(14, p), randData(15, p), randData(16, 2<<20+5)}
	etags := make([]string, 3)
	for _, i := range []int{2, 0, 1} {
		n, size := int32(i+1), int64(len(parts[i]))
		out, err := f.b.UploadPart(ctx, &awss3.UploadPartInput{Bucket: ptr("bkt"), Key: ptr("rev"), UploadId: &res.UploadId, PartNumber: &n, Body: bytes.NewReader(parts[i]), ContentLength: &size})
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		etags[i] = *out.ETag
	}
	if _, _, err := f.b.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: ptr("bkt"), Key: ptr("rev"), UploadId: &res.UploadId, MultipartUpload: completed([]int32{1, 2, 3}, etags)}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.get(t, ctx, "bkt", "rev"), slices.Concat(parts...); !bytes.Equal(got, want) {
		t.Errorf("last part first: GET after complete: %d bytes that differ from the %d sent", len(got), len(want))
	}
}

func TestPartBlocks(t *testing.T) {
	const def = 4 << 20
	for _, tc := range []struct {
		size int64
		want uint32
	}{
		{-1, def}, {1000, def}, {def, def}, {8 << 20, def}, {64 << 20, def},
		{5 << 20, 5 << 20}, {5<<20 + 1, 5<<20 + 1}, {maxPartBlock, def},
		{maxPartBlock + 2, (maxPartBlock + 2) / 2},
		{3 * (10<<20 + 1), 10<<20 + 1},
		{100<<20 + 1, def}, // no divisor from 1 to 16 MiB
	} {
		if got := partBlocks(tc.size, def); got != tc.want {
			t.Errorf("partBlocks(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
