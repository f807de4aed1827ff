package home

import (
	"bytes"
	"context"
	"strings"

	"github.com/minio/minio-go/v7"
)

// Remove deletes a file's object.
func (s *S3Store) Remove(ctx context.Context, path string) error {
	p, err := clean("remove", path)
	if err != nil {
		return err
	}
	k, _, err := s.kind(ctx, "remove", p)
	if err != nil {
		return err
	}
	switch k {
	case 0:
		return permanent("remove", p, ErrNotFound, "")
	case KindDir:
		return permanent("remove", p, ErrIsDir, "")
	}
	return s.err("remove", p, s.c.RemoveObject(ctx, s.bucket, s.key(p), minio.RemoveObjectOptions{}))
}

// Rmdir deletes an empty directory's marker.
func (s *S3Store) Rmdir(ctx context.Context, path string) error {
	p, err := clean("rmdir", path)
	if err != nil {
		return err
	}
	if p == "" {
		return permanent("rmdir", p, ErrInvalidPath, "the home's root")
	}
	k, _, err := s.kind(ctx, "rmdir", p)
	if err != nil {
		return err
	}
	switch k {
	case 0:
		return permanent("rmdir", p, ErrNotFound, "")
	case KindFile:
		return permanent("rmdir", p, ErrNotDir, "")
	}
	if empty, err := s.emptyDir(ctx, "rmdir", p); err != nil {
		return err
	} else if !empty {
		return permanent("rmdir", p, ErrNotEmpty, "")
	}
	return s.err("rmdir", p, s.c.RemoveObject(ctx, s.bucket, s.dirKey(p), minio.RemoveObjectOptions{}))
}

// emptyDir reports whether nothing but the marker is under p.
func (s *S3Store) emptyDir(ctx context.Context, op, p string) (bool, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dk := s.dirKey(p)
	for o := range s.c.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: dk, Recursive: true, MaxKeys: 2}) {
		if o.Err != nil {
			return false, s.err(op, p, o.Err)
		}
		if o.Key != dk {
			return false, nil
		}
	}
	return true, nil
}

// Rename copies then deletes: a file's object, or every object under a
// directory's prefix (marker last, so that an interrupted rename leaves the
// source directory whole-looking until its last object went).
func (s *S3Store) Rename(ctx context.Context, from, to string) error {
	f, err := clean("rename", from)
	if err != nil {
		return err
	}
	t, err := clean("rename", to)
	if err != nil {
		return err
	}
	if f == "" || t == "" {
		return permanent("rename", from, ErrInvalidPath, "the home's root")
	}
	if f == t {
		return nil
	}
	if strings.HasPrefix(t+"/", f+"/") {
		return permanent("rename", from, ErrInvalidPath, "into itself (%q)", to)
	}
	fk, _, err := s.kind(ctx, "rename", f)
	if err != nil {
		return err
	}
	if fk == 0 {
		return permanent("rename", f, ErrNotFound, "")
	}
	if err := s.checkParent(ctx, "rename", t); err != nil {
		return err
	}
	tk, _, err := s.kind(ctx, "rename", t)
	if err != nil {
		return err
	}
	switch {
	case fk == KindFile && tk == KindDir:
		return permanent("rename", t, ErrIsDir, "")
	case fk == KindDir && tk == KindFile:
		return permanent("rename", t, ErrNotDir, "")
	case fk == KindDir && tk == KindDir:
		if empty, err := s.emptyDir(ctx, "rename", t); err != nil {
			return err
		} else if !empty {
			if partial, err := s.partialCopy(ctx, f, t); err != nil {
				return err
			} else if !partial {
				return permanent("rename", t, ErrNotEmpty, "")
			}
		}
	}
	if fk == KindFile {
		if err := s.copy(ctx, f, s.key(f), s.key(t)); err != nil {
			return err
		}
		return s.err("rename", f, s.c.RemoveObject(ctx, s.bucket, s.key(f), minio.RemoveObjectOptions{}))
	}
	fd, td := s.dirKey(f), s.dirKey(t)
	var keys []string
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: fd, Recursive: true}) {
		if o.Err != nil {
			return s.err("rename", f, o.Err)
		}
		if o.Key != fd {
			keys = append(keys, o.Key)
		}
	}
	keys = append(keys, fd) // the marker last (it may be absent: a prefix without one)
	for _, k := range keys {
		dst := td + strings.TrimPrefix(k, fd)
		if strings.HasSuffix(k, "/") {
			// A marker is made anew rather than copied (some stores keep
			// markers as directories and refuse to copy them); the
			// target gets one even where the source had none.
			if _, err := s.c.PutObject(ctx, s.bucket, dst, bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
				return s.err("rename", t, err)
			}
			continue
		}
		if err := s.copy(ctx, f, k, dst); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := s.c.RemoveObject(ctx, s.bucket, k, minio.RemoveObjectOptions{}); err != nil {
			return s.err("rename", f, err)
		}
	}
	return nil
}

// partialCopy reports whether everything under directory t is a copy of
// an object under f of the same relative name and size: what a rename of
// f to t cut short leaves, which its retry may overwrite.
func (s *S3Store) partialCopy(ctx context.Context, f, t string) (bool, error) {
	fd, td := s.dirKey(f), s.dirKey(t)
	src := map[string]int64{}
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: fd, Recursive: true}) {
		if o.Err != nil {
			return false, s.err("rename", f, o.Err)
		}
		src[strings.TrimPrefix(o.Key, fd)] = o.Size
	}
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: td, Recursive: true}) {
		if o.Err != nil {
			return false, s.err("rename", t, o.Err)
		}
		rel := strings.TrimPrefix(o.Key, td)
		if rel == "" || strings.HasSuffix(rel, "/") {
			continue // markers: made anew by the rename
		}
		if size, ok := src[rel]; !ok || size != o.Size {
			return false, nil
		}
	}
	return true, nil
}

func (s *S3Store) copy(ctx context.Context, p, src, dst string) error {
	_, err := s.c.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: s.bucket, Object: dst},
		minio.CopySrcOptions{Bucket: s.bucket, Object: src})
	return s.err("rename", p, err)
}
