package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// object returns what key names in bucket: a regular file, or a
// directory when the key ends with "/". Anything else is NoSuchKey.
func (b *Backend) object(ctx context.Context, c caller, bucket, key string) (meta.Inode, error) {
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return meta.Inode{}, err
	}
	comps, isDir, err := splitKey(key)
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := b.walk(ctx, c, bkt, comps)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return meta.Inode{}, s3err.GetAPIError(s3err.ErrNoSuchKey)
	}
	if err != nil {
		return meta.Inode{}, b.fail("lookup", err)
	}
	if isDir != in.IsDir() || !in.IsDir() && !in.IsRegular() {
		return meta.Inode{}, s3err.GetAPIError(s3err.ErrNoSuchKey)
	}
	return in, nil
}

// HeadObject answers an object's attributes and record.
func (b *Backend) HeadObject(ctx context.Context, in *awss3.HeadObjectInput) (*awss3.HeadObjectOutput, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return nil, err
	}
	obj, err := b.object(ctx, c, deref(in.Bucket), deref(in.Key))
	if err != nil {
		return nil, err
	}
	if err := b.mayRead(ctx, c, &obj); err != nil {
		return nil, err
	}
	r := b.objRecord(ctx, &obj)
	if err := backend.EvaluatePreconditions(r.ETag, mtime(&obj), backend.PreConditions{
		IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch, IfModSince: in.IfModifiedSince, IfUnmodeSince: in.IfUnmodifiedSince,
	}); err != nil {
		return nil, err
	}
	size := int64(r.Size)
	start, length, ranged, err := backend.ParseObjectRange(size, deref(in.Range))
	if err != nil {
		return nil, err
	}
	out := &awss3.HeadObjectOutput{
		AcceptRanges:  ptr("bytes"),
		ContentLength: &length,
		ETag:          ptr(r.ETag),
		LastModified:  ptr(mtime(&obj)),
		Metadata:      r.Meta,
		StorageClass:  types.StorageClassStandard,
	}
	if ranged {
		out.ContentRange = ptr(fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
	}
	if r.ContentType != "" {
		out.ContentType = ptr(r.ContentType)
	}
	if r.Parts > 0 {
		n := int32(r.Parts)
		out.PartsCount = &n
	}
	return out, nil
}

// objRecord is obj's record; a directory's is the empty object's.
func (b *Backend) objRecord(ctx context.Context, obj *meta.Inode) record {
	if obj.IsDir() {
		return record{ETag: emptyETag, Mtime: obj.Mtime}
	}
	return b.readRecord(ctx, obj)
}

// mayRead checks read permission on obj, with the attributes just looked
// up.
func (b *Backend) mayRead(_ context.Context, c caller, obj *meta.Inode) error {
	if !vfs.Permits(c.cred, &obj.Attr, vfs.MayRead) {
		return s3err.GetAPIError(s3err.ErrAccessDenied)
	}
	return nil
}

// GetObject streams an object, or the range asked for, from an open
// handle released when the body is closed.
func (b *Backend) GetObject(ctx context.Context, in *awss3.GetObjectInput) (*awss3.GetObjectOutput, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return nil, err
	}
	obj, err := b.object(ctx, c, deref(in.Bucket), deref(in.Key))
	if err != nil {
		return nil, err
	}
	r := b.objRecord(ctx, &obj)
	if err := backend.EvaluatePreconditions(r.ETag, mtime(&obj), backend.PreConditions{
		IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch, IfModSince: in.IfModifiedSince, IfUnmodeSince: in.IfUnmodifiedSince,
	}); err != nil {
		return nil, err
	}
	out := &awss3.GetObjectOutput{
		AcceptRanges: ptr("bytes"),
		ETag:         ptr(r.ETag),
		LastModified: ptr(mtime(&obj)),
		Metadata:     r.Meta,
		StorageClass: types.StorageClassStandard,
	}
	if r.ContentType != "" {
		out.ContentType = ptr(r.ContentType)
	}
	if obj.IsDir() {
		zero := int64(0)
		out.ContentLength = &zero
		out.Body = io.NopCloser(eofReader{})
		return out, nil
	}
	// The attributes just looked up answer the permission check: the
	// open does not fetch them again.
	if err := b.mayRead(ctx, c, &obj); err != nil {
		return nil, err
	}
	if body, ok := inlineBody(&obj); ok {
		// The whole content came with the lookup: no open, no read.
		size := int64(len(body))
		start, length, ranged, err := backend.ParseObjectRange(size, deref(in.Range))
		if err != nil {
			return nil, err
		}
		if ranged {
			out.ContentRange = ptr(fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
		}
		out.ContentLength = &length
		out.Body = io.NopCloser(bytes.NewReader(body[start : start+length]))
		return out, nil
	}
	checked := c.cred
	checked.Checked = true
	o, err := b.v.OpenFile(ctx, checked, obj.Ino, syscall.O_RDONLY)
	if err != nil {
		return nil, b.fail("open", err)
	}
	size := o.File.Size()
	start, length, ranged, err := backend.ParseObjectRange(size, deref(in.Range))
	if err != nil {
		b.v.Release(context.WithoutCancel(ctx), o.Fh)
		return nil, err
	}
	if ranged {
		out.ContentRange = ptr(fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
	}
	out.ContentLength = &length
	out.Body = &objectReader{v: b.v, fh: o.Fh, f: o.File, off: start, end: start + length, log: b}
	return out, nil
}

// inlineBody returns the content of a regular file whose lookup carried
// all of it (block 0 kept inline in the inode record, the file no longer
// than that block): the lookup's reply is one version of the file, its
// attributes and content together, as an open and a read would see it.
// Not for a fileset's file, whose inline block may be a cache of a home
// object not fetched yet.
func inlineBody(in *meta.Inode) ([]byte, bool) {
	if !in.IsRegular() || !in.HasInline || in.Gateway != nil || in.Size > uint64(len(in.Inline)) {
		return nil, false
	}
	return in.Inline[:in.Size], true
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// objectReader reads an open file from off to end; Close releases it.
// The reads outlive the request's handler (the body is sent after it
// returns), so they have a context of their own.
type objectReader struct {
	v        *vfs.FS
	fh       uint64
	f        *vfs.File
	off, end int64
	closed   bool
	log      *Backend
}

func (r *objectReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-r.off {
		p = p[:r.end-r.off]
	}
	n, err := r.f.Read(context.Background(), r.off, p)
	r.off += int64(n)
	if err != nil {
		return n, err
	}
	if n == 0 {
		// The file shrank under the read: the body cannot be whole.
		return 0, io.ErrUnexpectedEOF
	}
	return n, nil
}

// WriteTo sends the rest of the object to w in reads of up to ioChunk.
// The HTTP server copies a body through WriteTo when it has one; else it
// reads it 4 KiB at a time (its write buffer), each read a trip through
// vfs and the client's file lock: 256 for a 1 MiB object, 32,768 for a
// 128 MiB range.
func (r *objectReader) WriteTo(w io.Writer) (int64, error) {
	if r.off >= r.end {
		return 0, nil
	}
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp
	if rest := r.end - r.off; rest < int64(len(buf)) {
		buf = buf[:rest]
	}
	var total int64
	for r.off < r.end {
		n, err := r.Read(buf[:min(int64(len(buf)), r.end-r.off)])
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// chunkPool holds the buffers objectReader.WriteTo sends through.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, ioChunk); return &b }}

func (r *objectReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.v.Release(context.Background(), r.fh)
}

// DeleteObject removes an object (a missing one is no error, as in S3)
// and the directories it leaves empty up to the bucket; a key ending
// with "/" removes that directory if it is empty.
func (b *Backend) DeleteObject(ctx context.Context, in *awss3.DeleteObjectInput) (*awss3.DeleteObjectOutput, error) {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := b.deleteKey(ctx, c, deref(in.Bucket), deref(in.Key)); err != nil {
		return nil, err
	}
	return &awss3.DeleteObjectOutput{}, nil
}

func (b *Backend) deleteKey(ctx context.Context, c caller, bucket, key string) error {
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return err
	}
	comps, isDir, err := splitKey(key)
	if err != nil {
		return err
	}
	dirs := []meta.Ino{bkt.Ino}
	cur := bkt.Ino
	for _, name := range comps[:len(comps)-1] {
		in, err := b.v.Lookup(ctx, c.cred, cur, name)
		if errors.Is(err, syscall.ENOENT) || err == nil && !in.IsDir() {
			return nil
		}
		if err != nil {
			return b.fail("lookup", err)
		}
		cur = in.Ino
		dirs = append(dirs, cur)
	}
	name := comps[len(comps)-1]
	old, err := b.v.Lookup(ctx, c.cred, cur, name)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return b.fail("lookup", err)
	}
	switch {
	case isDir && old.IsDir():
		err = b.rmdir(ctx, c.cred, cur, name)
		if errors.Is(err, syscall.ENOTEMPTY) {
			return s3err.GetAPIError(s3err.ErrDirectoryNotEmpty)
		}
	case isDir || old.IsDir():
		return nil // "a/" names no file and "a" no directory
	default:
		err = b.v.Unlink(ctx, c.cred, cur, name)
	}
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return b.fail("delete", err)
	}
	// The prefixes the key was the last object of go with it.
	for i := len(dirs) - 1; i > 0; i-- {
		if err := b.rmdir(ctx, c.cred, dirs[i-1], comps[i-1]); err != nil {
			break
		}
	}
	return nil
}

// maxDeleteObjects bounds a DeleteObjects request (S3's 1000).
const maxDeleteObjects = 1000

// DeleteObjects removes each key as DeleteObject does, reporting each.
func (b *Backend) DeleteObjects(ctx context.Context, in *awss3.DeleteObjectsInput) (s3response.DeleteResult, error) {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return s3response.DeleteResult{}, err
	}
	if in.Delete == nil || len(in.Delete.Objects) > maxDeleteObjects {
		return s3response.DeleteResult{}, s3err.GetAPIError(s3err.ErrMalformedXML)
	}
	var res s3response.DeleteResult
	for _, o := range in.Delete.Objects {
		key := deref(o.Key)
		if err := b.deleteKey(ctx, c, deref(in.Bucket), key); err != nil {
			apiErr := asAPIError(err)
			res.Error = append(res.Error, types.Error{Key: ptr(key), Code: ptr(apiErr.Code), Message: ptr(apiErr.Description)})
			continue
		}
		res.Deleted = append(res.Deleted, types.DeletedObject{Key: ptr(key)})
	}
	return res, nil
}

func ptr[T any](v T) *T { return &v }

// asAPIError is err's S3 error (InternalError for anything else).
func asAPIError(err error) s3err.APIError {
	var apiErr s3err.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var typed interface{ BaseError() s3err.APIError }
	if errors.As(err, &typed) {
		return typed.BaseError()
	}
	return s3err.GetAPIError(s3err.ErrInternalError)
}
