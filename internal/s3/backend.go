package s3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	vgwauth "github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3api/utils"
	"github.com/versity/versitygw/s3err"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// Backend is versitygw's backend over a vfs.FS: every call is made with
// the credentials of the access key that signed the request.
type Backend struct {
	backend.BackendUnsupported
	v    *vfs.FS
	api  meta.API
	iam  *IAM
	root string // the serving root (--root), clean and absolute
	log  *slog.Logger
	clk  clock.Clock
	// expiry is the age past which an upload is removed (expire.go);
	// 0 or less: never.
	expiry  time.Duration
	buckets bucketCache // bucketcache.go
	dirs    bucketCache // dircache.go: prefix directories
	records recordCache // recordcache.go
	// listChunk is how many entries a listing reads from a directory at
	// a time (list.go; tests make it small).
	listChunk int
}

// Config is what a Backend serves.
type Config struct {
	// Root is the directory whose subdirectories are the buckets of
	// keys without a root of their own ("" or "/": the namespace's root).
	Root   string
	Logger *slog.Logger
	// Clock tells the age of multipart uploads (nil: the machine's).
	Clock clock.Clock
	// UploadExpiry is the age past which an upload neither completed nor
	// aborted is removed: 0 is DefaultUploadExpiry, less than 0 never.
	UploadExpiry time.Duration
}

// NewBackend returns the backend of v, finding keys through iam.
func NewBackend(v *vfs.FS, iam *IAM, cfg Config) (*Backend, error) {
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root {
		return nil, fmt.Errorf("s3: root %q: want a clean absolute path such as /proj", cfg.Root)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.UploadExpiry == 0 {
		cfg.UploadExpiry = DefaultUploadExpiry
	}
	return &Backend{v: v, api: v.Client().Meta(), iam: iam, root: root, log: cfg.Logger,
		clk: clock.Or(cfg.Clock), expiry: cfg.UploadExpiry, listChunk: 1024}, nil
}

// String names the backend in versitygw's messages.
func (b *Backend) String() string { return "tessera" }

// Shutdown has nothing to release (the caller closes the vfs).
func (b *Backend) Shutdown() {}

// caller is who made a request: the key and the identity it maps to.
type caller struct {
	key  Key
	cred vfs.Cred
	base meta.Ino // the directory whose subdirectories are the buckets
	seen *seen
}

// seen holds the inodes a request looked up, which vfs's permission checks
// of directories in the same request use (vfs.WithFresh) instead of
// fetching them again: a bucket's attributes are fetched once a request,
// not once a call. For one request only, as vfs asks.
type seen struct {
	mu sync.Mutex
	m  map[meta.Ino]meta.Inode
}

// maxSeen bounds the inodes a request keeps (a key has at most 512
// components; most requests see two or three).
const maxSeen = 64

func (s *seen) put(in meta.Inode) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if len(s.m) < maxSeen {
		s.m[in.Ino] = in
	}
	s.mu.Unlock()
}

func (s *seen) get(ino meta.Ino) (meta.Inode, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.m[ino]
	return in, ok
}

// asRecords is how the backend reads and writes its own records (an
// object's, an upload's): the request was authorized already, so vfs
// checks nothing more (and fetches nothing for it).
var asRecords = vfs.Cred{Checked: true}

// accountKey is the name versitygw keeps the request's account under in
// the request's context (fiber's locals).
const accountKey = "account"

// who returns the caller of the request ctx carries, and the context the
// request's vfs calls are made with (carrying what it looked up); write
// says the request changes something (refused for a read-only key).
func (b *Backend) who(ctx context.Context, write bool) (caller, context.Context, error) {
	acct, ok := ctx.Value(accountKey).(vgwauth.Account)
	if !ok || acct.Access == "" {
		return caller{}, ctx, s3err.GetAPIError(s3err.ErrAccessDenied)
	}
	k, err := b.iam.Key(ctx, acct.Access)
	if err != nil {
		return caller{}, ctx, s3err.GetAPIError(s3err.ErrAccessDenied)
	}
	if write && k.ReadOnly {
		return caller{}, ctx, s3err.GetAPIError(s3err.ErrAccessDenied)
	}
	basePath := b.root
	if k.Root != "/" {
		if b.root != "/" && k.Root != b.root && !strings.HasPrefix(k.Root, b.root+"/") {
			return caller{}, ctx, s3err.GetAPIError(s3err.ErrAccessDenied)
		}
		basePath = k.Root
	}
	s := &seen{m: make(map[meta.Ino]meta.Inode, 4)}
	ctx = vfs.WithFresh(ctx, s.get)
	c := caller{key: k, cred: vfs.Cred{Uid: k.Uid, Gid: k.Gid}, base: meta.RootIno, seen: s}
	if basePath == "/" {
		return c, ctx, nil
	}
	base, err := b.v.Resolve(ctx, vfs.Root, meta.RootIno, basePath)
	if err != nil || !base.IsDir() {
		return caller{}, ctx, s3err.GetAPIError(s3err.ErrAccessDenied)
	}
	c.base = base.Ino
	s.put(base)
	return c, ctx, nil
}

// uploadsDir is the directory at a bucket's top holding the multipart
// uploads in progress; never listed, and no key may be in it.
const uploadsDir = ".tessera-s3-uploads"

// maxKeyLen bounds a key (S3's limit).
const maxKeyLen = 1024

// validBucket reports whether name is a bucket name (versitygw's rules).
func validBucket(name string) bool { return utils.IsValidBucketName(name) }

// splitKey returns the path components of key and whether it names a
// directory (ends with "/"). Empty components, "." and "..", names too
// long, a NUL, temporary names and the uploads directory are refused.
func splitKey(key string) ([]string, bool, error) {
	if key == "" {
		return nil, false, s3err.GetAPIError(s3err.ErrNoSuchKey)
	}
	if len(key) > maxKeyLen {
		return nil, false, s3err.GetKeyTooLongErr(int64(len(key)), maxKeyLen)
	}
	dir := strings.HasSuffix(key, "/")
	comps := strings.Split(strings.TrimSuffix(key, "/"), "/")
	for i, c := range comps {
		switch {
		case c == "" || c == "." || c == "..":
			return nil, false, badKey("a key with an empty, \".\" or \"..\" component")
		case len(c) > meta.MaxNameLen:
			return nil, false, s3err.GetKeyTooLongErr(int64(len(c)), meta.MaxNameLen)
		case strings.IndexByte(c, 0) >= 0:
			return nil, false, badKey("a key holding a NUL")
		case strings.HasPrefix(c, vfs.TmpPrefix):
			return nil, false, badKey("a key naming a temporary file")
		case i == 0 && c == uploadsDir:
			return nil, false, badKey("a key in the multipart uploads directory")
		}
	}
	return comps, dir, nil
}

// badKey is an InvalidArgument-style error naming what is wrong with a key.
func badKey(what string) error {
	return s3err.APIError{Code: "InvalidArgument", Description: "Tessera keys are paths: " + what + " is refused.", HTTPStatusCode: 400}
}

// hidden reports whether a directory entry is never listed: temporary
// files, and the uploads directory at a bucket's top.
func hidden(name string, top bool) bool {
	return strings.HasPrefix(name, vfs.TmpPrefix) || top && name == uploadsDir
}

// bucket returns bucket name's directory.
func (b *Backend) bucket(ctx context.Context, c caller, name string) (meta.Inode, error) {
	if !validBucket(name) {
		return meta.Inode{}, s3err.GetBucketErr(s3err.ErrInvalidBucketName, name)
	}
	key := bucketKey{base: c.base, name: name, uid: c.cred.Uid, gid: c.cred.Gid}
	if in, ok := b.buckets.get(key, b.clk.Now()); ok {
		c.seen.put(in)
		return in, nil
	}
	in, err := b.v.Lookup(ctx, c.cred, c.base, name)
	if errors.Is(err, syscall.ENOENT) || err == nil && !in.IsDir() {
		return meta.Inode{}, s3err.GetBucketErr(s3err.ErrNoSuchBucket, name)
	}
	if err != nil {
		return meta.Inode{}, b.fail("bucket", err)
	}
	b.buckets.put(key, in, b.clk.Now())
	c.seen.put(in)
	return in, nil
}

// walk returns what comps name under directory dir (nothing is made);
// ENOENT or ENOTDIR when it is not there. The directories before the last
// component come from the cache (dircache.go); a miss past a kept one is
// looked up again afresh.
func (b *Backend) walk(ctx context.Context, c caller, dir meta.Inode, comps []string) (meta.Inode, error) {
	in, cached, err := b.walkFrom(ctx, c, dir, comps, false)
	if err != nil && cached && stale(err) {
		in, _, err = b.walkFrom(ctx, c, dir, comps, true)
	}
	return in, err
}

func (b *Backend) walkFrom(ctx context.Context, c caller, dir meta.Inode, comps []string, fresh bool) (cur meta.Inode, cached bool, err error) {
	cur = dir
	for i, name := range comps {
		if !cur.IsDir() {
			return meta.Inode{}, cached, syscall.ENOTDIR
		}
		if i < len(comps)-1 {
			var hit bool
			cur, hit, err = b.lookupDir(ctx, c, cur.Ino, name, fresh)
			cached = cached || hit
		} else {
			cur, err = b.v.Lookup(ctx, c.cred, cur.Ino, name)
		}
		if err != nil {
			return meta.Inode{}, cached, err
		}
		c.seen.put(cur)
	}
	return cur, cached, nil
}

// fail maps a file-system error to an S3 error: errnos to their S3
// codes; anything else is logged and answered as InternalError.
func (b *Backend) fail(op string, err error) error {
	// S3 errors (versitygw's: a body whose Content-MD5 or checksum does
	// not match, a broken chunk) pass as they are.
	var apiErr s3err.APIError
	var typed interface{ BaseError() s3err.APIError }
	if errors.As(err, &apiErr) || errors.As(err, &typed) {
		return err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return s3err.GetAPIError(s3err.ErrNoSuchKey)
		case syscall.EACCES, syscall.EPERM, syscall.EROFS:
			return s3err.GetAPIError(s3err.ErrAccessDenied)
		case syscall.ENOTDIR:
			return s3err.GetAPIError(s3err.ErrObjectParentIsFile)
		case syscall.EISDIR:
			return s3err.GetAPIError(s3err.ErrExistingObjectIsDirectory)
		case syscall.ENAMETOOLONG:
			return s3err.GetKeyTooLongErr(maxKeyLen, maxKeyLen)
		case syscall.ENOTEMPTY:
			return s3err.GetAPIError(s3err.ErrDirectoryNotEmpty)
		case syscall.ENOSPC:
			return s3err.GetAPIError(s3err.ErrNoSpaceLeftOnDevice)
		case syscall.EDQUOT:
			return s3err.GetAPIError(s3err.ErrQuotaExceeded)
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	b.log.Warn("s3: "+op+" failed", "err", err)
	return s3err.GetAPIError(s3err.ErrInternalError)
}

// GetBucketAcl answers for an existing bucket with an ACL owned by the
// caller and granting nothing: versitygw's own ACL checks are off (every
// account has its admin role), and no bucket is public.
func (b *Backend) GetBucketAcl(ctx context.Context, in *awss3.GetBucketAclInput) ([]byte, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return nil, err
	}
	if _, err := b.bucket(ctx, c, deref(in.Bucket)); err != nil {
		return nil, err
	}
	return json.Marshal(vgwauth.ACL{Owner: c.key.AccessKeyID})
}

// GetBucketPolicy: no bucket has a policy.
func (b *Backend) GetBucketPolicy(context.Context, string) ([]byte, error) {
	return nil, s3err.GetAPIError(s3err.ErrNoSuchBucketPolicy)
}

// GetObjectLockConfiguration: object locks are not kept.
func (b *Backend) GetObjectLockConfiguration(context.Context, string) ([]byte, error) {
	return nil, s3err.GetAPIError(s3err.ErrObjectLockConfigurationNotFound)
}

// GetBucketCors: no bucket has a CORS configuration.
func (b *Backend) GetBucketCors(context.Context, string) ([]byte, error) {
	return nil, s3err.GetAPIError(s3err.ErrNoSuchCORSConfiguration)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
