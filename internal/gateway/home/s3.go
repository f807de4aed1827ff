package home

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3PartSize is the part size of multipart uploads; objects up to it go in
// one PUT.
const s3PartSize = 16 << 20

// Connections to the S3 endpoint are kept between requests: across a WAN a
// new one costs a round trip before its first request (TCP), two or three
// with TLS, and starts at TCP's initial window. s3IdleConns is how many idle
// ones are kept, at least every home read a gateway has in flight (fetches
// of several files, each with its window of reads); net/http's default of
// 2 per host closed all but two after every burst, and the next burst
// dialed again. s3IdleTimeout is how long one is kept unused: well past a
// fileset's default validity lag (15 s), so that the revalidation of a
// file read a moment ago finds one, yet short enough not to hold sockets
// of an endpoint long unused (the server may close them sooner: a request
// then dials a new one).
const (
	s3IdleConns   = 64
	s3IdleTimeout = 90 * time.Second
)

// S3Store is a home in an S3 bucket under a prefix (s3://). The mapping:
//
//   - a file is the object PREFIX/PATH; its Token is the ETag, its Mtime the
//     object's Last-Modified; there is no Ctime and no mode;
//   - a directory is the prefix PREFIX/PATH/ with a marker object of that
//     name (empty); its Token is a digest of the names listed under it
//     (dirStat); a prefix with objects under it and no marker (written by
//     another tool) is also a directory; the root always exists;
//   - Create, Mkdir and WriteFile check that the parent directory exists
//     and that the name is not taken by the other kind (one HEAD each):
//     S3 itself would accept both a file "a" and a directory "a/";
//   - Rename copies every object (server side) then deletes the sources:
//     not atomic; a failure leaves both names and the retry finishes.
type S3Store struct {
	c      *minio.Client
	tr     *http.Transport
	bucket string
	prefix string // "" or ending in "/"
}

var (
	_ Store      = (*S3Store)(nil)
	_ KindStater = (*S3Store)(nil)
)

// OpenS3 opens the home s3://BUCKET/PREFIX with u's query: endpoint (the
// server's URL; http:// is plain HTTP), region, access_key_file (a file
// holding "ACCESS_KEY SECRET_KEY"), retries (the client's attempts per
// request, default 3). Without access_key_file the credentials come from
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, MINIO_ROOT_USER/
// MINIO_ROOT_PASSWORD, or ~/.aws/credentials, in that order.
func OpenS3(ctx context.Context, u *url.URL) (*S3Store, error) {
	q := u.Query()
	bucket := u.Host
	if bucket == "" {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "no bucket in the URL (s3://BUCKET/prefix)")
	}
	ep := q.Get("endpoint")
	if ep == "" {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "no endpoint= in the URL (e.g. endpoint=http://127.0.0.1:7070)")
	}
	epu, err := url.Parse(ep)
	if err != nil || (epu.Scheme != "http" && epu.Scheme != "https") || epu.Host == "" {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "endpoint %q: want http://HOST:PORT or https://HOST:PORT", ep)
	}
	var creds *credentials.Credentials
	if f := q.Get("access_key_file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, wrap("open", u.Redacted(), fmt.Errorf("access_key_file: %w", err), false)
		}
		fields := strings.Fields(string(b))
		if len(fields) != 2 {
			return nil, permanent("open", u.Redacted(), ErrInvalidPath, "access_key_file %s: want two words, ACCESS_KEY SECRET_KEY", f)
		}
		creds = credentials.NewStaticV4(fields[0], fields[1], "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.FileAWSCredentials{},
		})
	}
	retries := 3
	if r := q.Get("retries"); r != "" {
		if retries, err = strconv.Atoi(r); err != nil || retries < 1 {
			return nil, permanent("open", u.Redacted(), ErrInvalidPath, "retries=%q: want a number >= 1", r)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.IdleConnTimeout = s3IdleConns, s3IdleConns, s3IdleTimeout
	c, err := minio.New(epu.Host, &minio.Options{
		Creds: creds, Secure: epu.Scheme == "https", Region: q.Get("region"),
		BucketLookup: minio.BucketLookupPath, MaxRetries: retries, Transport: staleConnRetry{tr},
	})
	if err != nil {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "%v", err)
	}
	s := &S3Store{c: c, tr: tr, bucket: bucket}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if _, err := clean("open", p); err != nil {
			return nil, err
		}
		s.prefix = p + "/"
	}
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return nil, s.err("open", "", err)
	}
	if !ok {
		return nil, permanent("open", u.Redacted(), ErrNotFound, "no bucket %q at %s", bucket, ep)
	}
	return s, nil
}

// err classifies an S3 error: 404 and the S3 codes for a missing object or
// bucket are ErrNotFound, 403 ErrPermission, other 4xx permanent; 5xx, 429
// and errors without a response (the network) are retryable.
func (s *S3Store) err(op, p string, err error) error {
	if err == nil {
		return nil
	}
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey" || r.Code == "NoSuchBucket" || r.StatusCode == http.StatusNotFound:
		return &Error{Op: op, Path: p, Err: fmt.Errorf("%v: %w", err, ErrNotFound)}
	case r.StatusCode == http.StatusForbidden || r.StatusCode == http.StatusUnauthorized:
		return &Error{Op: op, Path: p, Err: fmt.Errorf("%v: %w", err, ErrPermission)}
	case r.StatusCode == http.StatusPreconditionFailed:
		return &Error{Op: op, Path: p, Err: fmt.Errorf("%v: %w", err, ErrExist)}
	case r.StatusCode == http.StatusTooManyRequests || r.StatusCode >= 500:
		return &Error{Op: op, Path: p, Err: fmt.Errorf("%v: %w", err, ErrUnavailable), Retry: true}
	case r.StatusCode >= 400:
		return &Error{Op: op, Path: p, Err: err}
	case r.StatusCode == 0 && r.Code != "":
		// minio-go's own checks of its arguments (a bucket name too short)
		return &Error{Op: op, Path: p, Err: fmt.Errorf("%v: %w", err, ErrInvalidPath)}
	}
	return wrap(op, p, err, true)
}

func (s *S3Store) key(p string) string { return s.prefix + p }

func (s *S3Store) dirKey(p string) string {
	if p == "" {
		return s.prefix
	}
	return s.prefix + p + "/"
}

func objAttr(name string, o minio.ObjectInfo) Attr {
	return Attr{Name: name, Kind: KindFile, Size: o.Size, Mtime: o.LastModified, Token: strings.Trim(o.ETag, `"`)}
}

// kind reports what p is: KindFile, KindDir (a marker or objects under
// it) or 0 when nothing is there. For a file it returns its info, for a
// directory its marker's (zero without one). A file's object is looked
// for first (one HEAD when p is a file), so where another tool made both
// a file and a directory of that name, p is the file.
func (s *S3Store) kind(ctx context.Context, op, p string) (Kind, minio.ObjectInfo, error) {
	if p == "" {
		return KindDir, minio.ObjectInfo{}, nil
	}
	if k, o, err := s.fileKind(ctx, op, p); k != 0 || err != nil {
		return k, o, err
	}
	return s.dirKind(ctx, op, p)
}

// fileKind is KindFile and the object's info if p's object exists, 0 if
// not: one HEAD.
func (s *S3Store) fileKind(ctx context.Context, op, p string) (Kind, minio.ObjectInfo, error) {
	o, err := s.c.StatObject(ctx, s.bucket, s.key(p), minio.StatObjectOptions{})
	if err == nil {
		return KindFile, o, nil
	}
	if e := s.err(op, p, err); !errors.Is(e, ErrNotFound) {
		return 0, minio.ObjectInfo{}, e
	}
	return 0, minio.ObjectInfo{}, nil
}

// dirKind is KindDir if p has a marker (its info returned: one HEAD) or
// objects under it (one more request, a listing of one key), 0 if neither.
func (s *S3Store) dirKind(ctx context.Context, op, p string) (Kind, minio.ObjectInfo, error) {
	m, err := s.c.StatObject(ctx, s.bucket, s.dirKey(p), minio.StatObjectOptions{})
	if err == nil {
		return KindDir, m, nil
	}
	if e := s.err(op, p, err); !errors.Is(e, ErrNotFound) {
		return 0, minio.ObjectInfo{}, e
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for o := range s.c.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: s.dirKey(p), MaxKeys: 1}) {
		if o.Err != nil {
			return 0, minio.ObjectInfo{}, s.err(op, p, o.Err)
		}
		return KindDir, minio.ObjectInfo{}, nil
	}
	return 0, minio.ObjectInfo{}, nil
}

// Stat returns path's attributes.
func (s *S3Store) Stat(ctx context.Context, path string) (Attr, error) {
	return s.StatKind(ctx, path, 0)
}

// StatKind implements KindStater: a path last seen as a directory (and
// the root) is listed first (dirStat), so that a directory costs one
// request rather than two or three (its name's object, missing, then the
// marker, then the listing its token needs).
// Where another tool made both a file and a directory of that name, the
// kind asked for is what is returned.
func (s *S3Store) StatKind(ctx context.Context, path string, was Kind) (Attr, error) {
	p, err := clean("stat", path)
	if err != nil {
		return Attr{}, err
	}
	_, name := split(p)
	if was == KindDir || p == "" {
		// One listing says whether the directory is there and gives its
		// token: one request for a directory, as a HEAD of its marker was.
		d, found, err := s.dirStat(ctx, p)
		if err != nil || found {
			d.Name = name
			return d, err
		}
	}
	k, o, err := s.kind(ctx, "stat", p)
	if err != nil {
		return Attr{}, err
	}
	switch k {
	case KindFile:
		return objAttr(name, o), nil
	case KindDir:
		d, _, err := s.dirStat(ctx, p)
		d.Name = name
		return d, err
	}
	return Attr{}, permanent("stat", p, ErrNotFound, "")
}

// dirStat lists directory p (a request per 1,000 names) and reports
// whether it is there (a marker, or anything under it; the root always
// is) with its attributes: the marker's Last-Modified, and a change token.
// S3 keeps nothing that changes with a prefix's entries (a marker's ETag
// stays when objects are added under it), so the token is a digest of the
// names directly under p and their kinds: it changes when home adds,
// removes or renames an entry of p, as a directory's mtime does on a file
// system. A changed file under p changes its own token, not p's.
func (s *S3Store) dirStat(ctx context.Context, p string) (Attr, bool, error) {
	dk := s.dirKey(p)
	h := sha256.New()
	found := p == ""
	var mtime time.Time
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dk}) {
		if o.Err != nil {
			return Attr{}, false, s.err("stat", p, o.Err)
		}
		found = true
		name := strings.TrimPrefix(o.Key, dk)
		if name == "" {
			mtime = o.LastModified // the marker
			continue
		}
		h.Write([]byte(name)) // a directory's name ends in "/"
		h.Write([]byte{0})
	}
	if !found {
		return Attr{}, false, nil
	}
	return Attr{Kind: KindDir, Mtime: mtime, Token: "names:" + hex.EncodeToString(h.Sum(nil)[:16])}, true, nil
}

// ReadDir lists the objects and prefixes directly under path.
func (s *S3Store) ReadDir(ctx context.Context, path string) ([]Attr, error) {
	p, err := clean("readdir", path)
	if err != nil {
		return nil, err
	}
	k, _, err := s.kind(ctx, "readdir", p)
	if err != nil {
		return nil, err
	}
	switch k {
	case 0:
		return nil, permanent("readdir", p, ErrNotFound, "")
	case KindFile:
		return nil, permanent("readdir", p, ErrNotDir, "")
	}
	dk := s.dirKey(p)
	var out []Attr
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dk}) {
		if o.Err != nil {
			return nil, s.err("readdir", p, o.Err)
		}
		name := strings.TrimPrefix(o.Key, dk)
		switch {
		case name == "":
			continue // the directory's own marker
		case strings.HasSuffix(name, "/"):
			out = append(out, Attr{Name: strings.TrimSuffix(name, "/"), Kind: KindDir})
		default:
			out = append(out, objAttr(name, o))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ReadAt is a ranged GET.
func (s *S3Store) ReadAt(ctx context.Context, path string, b []byte, off int64) (int, error) {
	p, err := clean("read", path)
	if err != nil {
		return 0, err
	}
	if p == "" {
		return 0, permanent("read", p, ErrIsDir, "")
	}
	if off < 0 {
		return 0, permanent("read", p, ErrInvalidPath, "negative offset %d", off)
	}
	if len(b) == 0 {
		return 0, nil
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+int64(len(b))-1); err != nil {
		return 0, permanent("read", p, ErrInvalidPath, "%v", err)
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(p), opts)
	if err != nil {
		return 0, s.readErr(ctx, p, err)
	}
	defer obj.Close()
	n, err := io.ReadFull(obj, b)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return n, io.EOF
	}
	return n, s.readErr(ctx, p, err)
}

// readErr turns a GET's error into the contract's: past the end is io.EOF,
// a missing object that is a directory ErrIsDir.
func (s *S3Store) readErr(ctx context.Context, p string, err error) error {
	if minio.ToErrorResponse(err).Code == "InvalidRange" || minio.ToErrorResponse(err).StatusCode == http.StatusRequestedRangeNotSatisfiable {
		return io.EOF
	}
	e := s.err("read", p, err)
	if errors.Is(e, ErrNotFound) {
		if k, _, kerr := s.kind(ctx, "read", p); kerr == nil && k == KindDir {
			return permanent("read", p, ErrIsDir, "")
		}
	}
	return e
}

// checkParent makes sure p's parent is a directory and p is not one.
func (s *S3Store) checkParent(ctx context.Context, op, p string) error {
	dir, _ := split(p)
	k, _, err := s.kind(ctx, op, dir)
	if err != nil {
		return err
	}
	switch k {
	case 0:
		return permanent(op, p, ErrNotFound, "no directory %q", dir)
	case KindFile:
		return permanent(op, p, ErrNotDir, "%q is a file", dir)
	}
	return nil
}

// Close releases idle connections.
func (s *S3Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}
