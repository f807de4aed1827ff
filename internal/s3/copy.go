package s3

import (
	"context"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
)

// CopyObject makes the destination from the source's blocks (share.go:
// no data is copied unless the source's block 0 is kept inline), under a
// temporary name renamed over the key. The ETag is the source's; the
// metadata is the source's, or the request's with REPLACE.
func (b *Backend) CopyObject(ctx context.Context, in s3response.CopyObjectInput) (s3response.CopyObjectOutput, error) {
	var out s3response.CopyObjectOutput
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return out, err
	}
	srcSpec := strings.TrimPrefix(deref(in.CopySource), "/")
	srcSpec, _, _ = strings.Cut(srcSpec, "?")
	if dec, err := url.PathUnescape(srcSpec); err == nil {
		srcSpec = dec
	}
	srcBucket, srcKey, ok := strings.Cut(srcSpec, "/")
	if !ok || srcKey == "" {
		return out, s3err.GetInvalidArgumentErr(s3err.InvalidArgCopySource, "")
	}
	src, err := b.object(ctx, c, srcBucket, srcKey)
	if err != nil {
		return out, err
	}
	if src.IsDir() {
		return out, s3err.GetAPIError(s3err.ErrNoSuchKey)
	}
	if err := b.mayRead(ctx, c, &src); err != nil {
		return out, err
	}
	r := b.readRecord(ctx, &src)
	if err := backend.EvaluatePreconditions(r.ETag, mtime(&src), backend.PreConditions{
		IfMatch: in.CopySourceIfMatch, IfNoneMatch: in.CopySourceIfNoneMatch,
		IfModSince: in.CopySourceIfModifiedSince, IfUnmodeSince: in.CopySourceIfUnmodifiedSince,
	}); err != nil {
		return out, err
	}
	if in.MetadataDirective == types.MetadataDirectiveReplace {
		if metaSize(in.Metadata) > maxMetadata {
			return out, s3err.GetMetadataTooLargeErr(metaSize(in.Metadata), maxMetadata)
		}
		r.Meta, r.ContentType = in.Metadata, deref(in.ContentType)
	}
	bkt, err := b.bucket(ctx, c, deref(in.Bucket))
	if err != nil {
		return out, err
	}
	comps, isDir, err := splitKey(deref(in.Key))
	if err != nil {
		return out, err
	}
	if isDir {
		return out, s3err.GetAPIError(s3err.ErrDirectoryObjectContainsData)
	}
	parent, err := b.mkdirAll(ctx, c, bkt.Ino, comps[:len(comps)-1])
	if err != nil {
		return out, err
	}
	// In the source's block size, whatever the directory's: its
	// blocks are then the copy's.
	w, _, err := b.newTemp(ctx, c, parent, src.BlockSize)
	if err != nil {
		return out, err
	}
	dst, err := b.v.GetAttr(ctx, w.ino)
	if err != nil {
		b.drop(ctx, w)
		return out, b.fail("copy", err)
	}
	if _, err := b.assemble(ctx, c, dst, []meta.Inode{src}); err != nil {
		b.drop(ctx, w)
		return out, b.fail("copy", err)
	}
	fin, err := b.publish(ctx, c, w, comps[len(comps)-1], r)
	if err != nil {
		return out, err
	}
	out.CopyObjectResult = &s3response.CopyObjectResult{ETag: ptr(r.ETag), LastModified: ptr(mtime(&fin))}
	return out, nil
}
