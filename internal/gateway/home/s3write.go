package home

import (
	"bytes"
	"context"
	"io"

	"github.com/minio/minio-go/v7"
)

func (s *S3Store) put(ctx context.Context, op, p string, r io.Reader, size int64) (minio.UploadInfo, error) {
	info, err := s.c.PutObject(ctx, s.bucket, s.key(p), r, size, minio.PutObjectOptions{
		PartSize: s3PartSize, ContentType: "application/octet-stream",
	})
	return info, s.err(op, p, err)
}

// WriteFile PUTs the object (multipart past s3PartSize): atomic.
func (s *S3Store) WriteFile(ctx context.Context, path string, r io.Reader, size int64, mode uint32) (Attr, error) {
	p, err := clean("write", path)
	if err != nil {
		return Attr{}, err
	}
	if p == "" {
		return Attr{}, permanent("write", p, ErrIsDir, "")
	}
	if err := s.checkParent(ctx, "write", p); err != nil {
		return Attr{}, err
	}
	if k, _, err := s.kind(ctx, "write", p); err != nil {
		return Attr{}, err
	} else if k == KindDir {
		return Attr{}, permanent("write", p, ErrIsDir, "")
	}
	if _, err := s.put(ctx, "write", p, r, size); err != nil {
		return Attr{}, err
	}
	return s.Stat(ctx, p)
}

// rewrite reads a whole object, lets change edit it, and PUTs it back.
func (s *S3Store) rewrite(ctx context.Context, op, p string, change func([]byte) []byte) error {
	if p == "" {
		return permanent(op, p, ErrIsDir, "")
	}
	k, o, err := s.kind(ctx, op, p)
	if err != nil {
		return err
	}
	switch k {
	case 0:
		return permanent(op, p, ErrNotFound, "")
	case KindDir:
		return permanent(op, p, ErrIsDir, "")
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(p), minio.GetObjectOptions{})
	if err != nil {
		return s.err(op, p, err)
	}
	defer obj.Close()
	data := make([]byte, 0, o.Size)
	buf := bytes.NewBuffer(data)
	if _, err := io.Copy(buf, obj); err != nil {
		return s.err(op, p, err)
	}
	out := change(buf.Bytes())
	_, err = s.put(ctx, op, p, bytes.NewReader(out), int64(len(out)))
	return err
}

// WriteAt rewrites the object with p at off.
func (s *S3Store) WriteAt(ctx context.Context, path string, b []byte, off int64) error {
	p, err := clean("write", path)
	if err != nil {
		return err
	}
	if off < 0 {
		return permanent("write", p, ErrInvalidPath, "negative offset %d", off)
	}
	return s.rewrite(ctx, "write", p, func(d []byte) []byte {
		if end := off + int64(len(b)); end > int64(len(d)) {
			d = append(d, make([]byte, end-int64(len(d)))...)
		}
		copy(d[off:], b)
		return d
	})
}

// Truncate rewrites the object at the new size.
func (s *S3Store) Truncate(ctx context.Context, path string, size int64) error {
	p, err := clean("truncate", path)
	if err != nil {
		return err
	}
	if size < 0 {
		return permanent("truncate", p, ErrInvalidPath, "negative size %d", size)
	}
	return s.rewrite(ctx, "truncate", p, func(d []byte) []byte {
		if size <= int64(len(d)) {
			return d[:size]
		}
		return append(d, make([]byte, size-int64(len(d)))...)
	})
}

// create makes an empty object (a file, or a directory's marker) after
// checking that neither kind is there.
func (s *S3Store) create(ctx context.Context, op, p, key string) error {
	if p == "" {
		return permanent(op, p, ErrExist, "")
	}
	if err := s.checkParent(ctx, op, p); err != nil {
		return err
	}
	k, _, err := s.kind(ctx, op, p)
	if err != nil {
		return err
	}
	if k != 0 {
		return permanent(op, p, ErrExist, "")
	}
	_, err = s.c.PutObject(ctx, s.bucket, key, bytes.NewReader(nil), 0, minio.PutObjectOptions{})
	return s.err(op, p, err)
}

// Create makes an empty object.
func (s *S3Store) Create(ctx context.Context, path string, mode uint32) error {
	p, err := clean("create", path)
	if err != nil {
		return err
	}
	return s.create(ctx, "create", p, s.key(p))
}

// Mkdir makes the directory's marker object.
func (s *S3Store) Mkdir(ctx context.Context, path string, mode uint32) error {
	p, err := clean("mkdir", path)
	if err != nil {
		return err
	}
	return s.create(ctx, "mkdir", p, s.dirKey(p))
}
