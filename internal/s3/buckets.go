package s3

import (
	"context"
	"errors"
	"syscall"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
)

// maxBuckets bounds the buckets one listing returns.
const maxBuckets = 10000

// ListBuckets lists the directories under the caller's base whose names
// are bucket names.
func (b *Backend) ListBuckets(ctx context.Context, in s3response.ListBucketsInput) (s3response.ListAllMyBucketsResult, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return s3response.ListAllMyBucketsResult{}, err
	}
	limit := int(in.MaxBuckets)
	if limit <= 0 || limit > maxBuckets {
		limit = maxBuckets
	}
	res := s3response.ListAllMyBucketsResult{Owner: s3response.CanonicalUser{ID: c.key.AccessKeyID}, Prefix: in.Prefix}
	after := in.ContinuationToken
	for {
		ents, more, err := b.v.ReadDir(ctx, c.cred, c.base, after, 1024, true)
		if err != nil {
			return res, b.fail("list buckets", err)
		}
		for _, e := range ents {
			after = e.Name
			if e.Inode == nil || !e.Inode.IsDir() || !validBucket(e.Name) || len(e.Name) < len(in.Prefix) || e.Name[:len(in.Prefix)] != in.Prefix {
				continue
			}
			if len(res.Buckets.Bucket) == limit {
				res.ContinuationToken = res.Buckets.Bucket[limit-1].Name
				return res, nil
			}
			res.Buckets.Bucket = append(res.Buckets.Bucket, s3response.ListAllMyBucketsEntry{
				Name: e.Name, CreationDate: time.Unix(0, e.Inode.Ctime),
			})
		}
		if !more {
			return res, nil
		}
	}
}

// HeadBucket answers whether the bucket exists (for the caller).
func (b *Backend) HeadBucket(ctx context.Context, in *awss3.HeadBucketInput) (*awss3.HeadBucketOutput, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return nil, err
	}
	if _, err := b.bucket(ctx, c, deref(in.Bucket)); err != nil {
		return nil, err
	}
	return &awss3.HeadBucketOutput{}, nil
}

// CreateBucket makes the bucket's directory under the caller's base.
func (b *Backend) CreateBucket(ctx context.Context, in *awss3.CreateBucketInput, _ []byte) error {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return err
	}
	name := deref(in.Bucket)
	if !validBucket(name) {
		return s3err.GetBucketErr(s3err.ErrInvalidBucketName, name)
	}
	_, err = b.v.Create(ctx, c.cred, meta.CreateReq{Parent: c.base, Name: name, Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if errors.Is(err, syscall.EEXIST) {
		return s3err.GetBucketErr(s3err.ErrBucketAlreadyOwnedByYou, name)
	}
	if err != nil {
		return b.fail("create bucket", err)
	}
	return nil
}

// DeleteBucket removes an empty bucket (multipart uploads in progress
// keep it).
func (b *Backend) DeleteBucket(ctx context.Context, name string) error {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return err
	}
	bkt, err := b.bucket(ctx, c, name)
	if err != nil {
		return err
	}
	if err := b.rmdir(ctx, c.cred, bkt.Ino, uploadsDir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return s3err.GetBucketErr(s3err.ErrBucketNotEmpty, name)
	}
	err = b.rmdir(ctx, c.cred, c.base, name)
	b.buckets.forget(c.base, name)
	if errors.Is(err, syscall.ENOTEMPTY) {
		return s3err.GetBucketErr(s3err.ErrBucketNotEmpty, name)
	}
	if err != nil {
		return b.fail("delete bucket", err)
	}
	return nil
}
