package s3

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
)

// Listing walks the bucket's tree in key order: a directory's entries are
// sorted as their keys sort (a directory's name with "/" after it), and
// a subtree whose keys all sort before the marker is skipped whole. With
// the delimiter "/", a directory at the prefix's level is a common prefix
// and is not walked into.

// maxKeys is the most keys one listing returns (S3's 1000).
const maxKeys = 1000

// maxDirEntries bounds the entries of one directory a listing holds read
// but not yet listed (a chunk, and the directories whose keys sort past
// it).
const maxDirEntries = 1 << 20

type listReq struct {
	prefix, delim, marker string
	max                   int
}

type listRes struct {
	objects   []s3response.Object
	inodes    []*meta.Inode // objects[i]'s, for its ETag (etags)
	prefixes  []types.CommonPrefix
	truncated bool
	next      string // the last key or common prefix returned
}

// count is the keys and common prefixes gathered.
func (r *listRes) count() int { return len(r.objects) + len(r.prefixes) }

// errFull stops a walk once the listing is full.
var errFull = errors.New("listing full")

type lister struct {
	b   *Backend
	c   caller
	req listReq
	res listRes
}

// list runs req on bucket.
func (b *Backend) list(ctx context.Context, c caller, bucket string, req listReq) (listRes, error) {
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return listRes{}, err
	}
	if req.max < 0 {
		return listRes{}, s3err.GetInvalidArgumentErr(s3err.InvalidArgNegativeMaxKeys, fmt.Sprint(req.max))
	}
	if req.max > maxKeys {
		req.max = maxKeys
	}
	if req.max == 0 {
		return listRes{}, nil
	}
	// Start at the directory the prefix's complete components name.
	dirKey := req.prefix[:strings.LastIndex(req.prefix, "/")+1]
	start := bkt
	if dirKey != "" {
		comps := strings.Split(strings.TrimSuffix(dirKey, "/"), "/")
		if start, err = b.walk(ctx, c, bkt, comps); err != nil || !start.IsDir() {
			if err == nil || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EINVAL) {
				return listRes{}, nil
			}
			return listRes{}, b.fail("list", err)
		}
	}
	l := &lister{b: b, c: c, req: req}
	if err := l.dir(ctx, start.Ino, dirKey); err != nil && !errors.Is(err, errFull) {
		return listRes{}, b.fail("list", err)
	}
	l.etags(ctx)
	return l.res, nil
}

// etags reads the listed objects' records for their ETags, recipeReads at
// once: a page of 1,000 keys is 1,000 meta calls, not 1,000 round trips.
func (l *lister) etags(ctx context.Context) {
	objs, ins := l.res.objects, l.res.inodes
	each(len(objs), recipeReads, func(i int) error {
		objs[i].ETag = ptr(l.b.readRecord(ctx, ins[i]).ETag)
		return nil
	})
	l.res.inodes = nil
}

type entry struct {
	key string
	in  *meta.Inode
}

// startAfter is the name a directory's read may start after when the
// marker, relative to the directory, is m. Entries come in name order and
// a directory's keys are its name and "/": a name before m has no key
// past the marker unless it is a directory whose name is a prefix m[:j]
// with m[j] <= '/' (its keys then follow the marker, or the marker is in
// it). The first such prefix bounds the names that may be skipped; the
// name returned is a prefix of it, so a little more is read than needed,
// never less.
func startAfter(m string) string {
	i := strings.IndexFunc(m, func(r rune) bool { return r <= '/' })
	if i < 0 {
		i = len(m)
	}
	_, n := utf8.DecodeLastRuneInString(m[:i])
	return m[:i-n]
}

// add appends a key or a common prefix, or stops the walk when the
// listing is full (then it is truncated).
func (l *lister) add(obj *s3response.Object, in *meta.Inode, prefix string) error {
	if l.res.count() == l.req.max {
		l.res.truncated = true
		return errFull
	}
	if obj != nil {
		l.res.objects = append(l.res.objects, *obj)
		l.res.inodes = append(l.res.inodes, in)
		l.res.next = *obj.Key
	} else {
		l.res.prefixes = append(l.res.prefixes, types.CommonPrefix{Prefix: ptr(prefix)})
		l.res.next = prefix
	}
	return nil
}

// dir lists directory ino, whose keys start with key, in key order. Its
// entries are read in name order, a chunk at a time, from
// startAfter(marker) on: an entry is listed once no entry still unread
// can sort before it (those have names past the last one read, so keys
// past key+that name), and the listing stops reading once the page is
// full. A page of a large directory reads about the page, not the
// directory.
func (l *lister) dir(ctx context.Context, ino meta.Ino, key string) error {
	after := ""
	if strings.HasPrefix(l.req.marker, key) {
		after = startAfter(l.req.marker[len(key):])
	}
	var pending []entry // read, not listed yet, by key
	for {
		ents, more, err := l.b.v.ReadDir(ctx, l.c.cred, ino, after, l.b.listChunk, true)
		if err != nil {
			return err
		}
		for _, e := range ents {
			after = e.Name
			if e.Inode == nil || hidden(e.Name, key == "") {
				continue
			}
			k := key + e.Name
			switch {
			case e.Inode.IsDir():
				k += "/"
			case !e.Inode.IsRegular():
				continue
			}
			pending = append(pending, entry{key: k, in: e.Inode})
		}
		if len(pending) > maxDirEntries {
			return fmt.Errorf("more than %d entries of a directory waiting to be listed", maxDirEntries)
		}
		slices.SortFunc(pending, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		n := len(pending)
		if more && len(ents) > 0 {
			bound := key + after
			n, _ = slices.BinarySearchFunc(pending, bound, func(e entry, b string) int {
				if e.key <= b {
					return -1
				}
				return 1
			})
		} else {
			more = false
		}
		for _, e := range pending[:n] {
			if err := l.entry(ctx, e); err != nil {
				return err
			}
		}
		pending = append(pending[:0:0], pending[n:]...)
		if !more {
			return nil
		}
	}
}

// entry lists e (a key, a common prefix, or a directory walked into)
// if the request asks for it.
func (l *lister) entry(ctx context.Context, e entry) error {
	req := &l.req
	k := e.key
	if !strings.HasPrefix(k, req.prefix) && !strings.HasPrefix(req.prefix, k) {
		return nil
	}
	if e.in.IsDir() {
		// Every key under k sorts after k and shares it: the subtree
		// is skipped when all of it sorts up to the marker.
		if k <= req.marker && !strings.HasPrefix(req.marker, k) {
			return nil
		}
		if strings.HasPrefix(k, req.prefix) && req.delim != "" {
			if i := strings.Index(k[len(req.prefix):], req.delim); i >= 0 && len(req.prefix)+i+len(req.delim) <= len(k) {
				cp := k[:len(req.prefix)+i+len(req.delim)]
				if cp == k { // the directory is the common prefix
					if cp > req.marker && !l.seen(cp) {
						if err := l.add(nil, nil, cp); err != nil {
							return err
						}
					}
					return nil
				}
			}
		}
		if err := l.dir(ctx, e.in.Ino, k); err != nil {
			return err
		}
		return nil
	}
	if !strings.HasPrefix(k, req.prefix) || k <= req.marker {
		return nil
	}
	if req.delim != "" {
		if i := strings.Index(k[len(req.prefix):], req.delim); i >= 0 {
			cp := k[:len(req.prefix)+i+len(req.delim)]
			if cp > req.marker && !l.seen(cp) {
				if err := l.add(nil, nil, cp); err != nil {
					return err
				}
			}
			return nil
		}
	}
	size := int64(e.in.Size)
	mt := time.Unix(0, e.in.Mtime)
	if err := l.add(&s3response.Object{Key: ptr(k), Size: &size, LastModified: &mt, StorageClass: types.ObjectStorageClassStandard}, e.in, ""); err != nil {
		return err
	}
	return nil
}

// seen reports whether cp is the last common prefix added (keys come in
// order, so a repeated one follows its first).
func (l *lister) seen(cp string) bool {
	n := len(l.res.prefixes)
	return n > 0 && *l.res.prefixes[n-1].Prefix == cp
}

func maxOf(p *int32) int {
	if p == nil {
		return maxKeys
	}
	return int(*p)
}

// ListObjectsV2 lists keys with prefix, delimiter, continuation token and
// start-after (the token is the last key or common prefix returned).
func (b *Backend) ListObjectsV2(ctx context.Context, in *awss3.ListObjectsV2Input) (s3response.ListObjectsV2Result, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return s3response.ListObjectsV2Result{}, err
	}
	marker := deref(in.StartAfter)
	if tok := deref(in.ContinuationToken); tok != "" {
		marker = tok
	}
	req := listReq{prefix: deref(in.Prefix), delim: deref(in.Delimiter), marker: marker, max: maxOf(in.MaxKeys)}
	res, err := b.list(ctx, c, deref(in.Bucket), req)
	if err != nil {
		return s3response.ListObjectsV2Result{}, err
	}
	n := int32(res.count())
	mk := int32(min(req.max, maxKeys))
	out := s3response.ListObjectsV2Result{
		Name: in.Bucket, Prefix: in.Prefix, StartAfter: in.StartAfter, ContinuationToken: in.ContinuationToken,
		KeyCount: &n, MaxKeys: &mk, Delimiter: in.Delimiter, IsTruncated: &res.truncated,
		Contents: res.objects, CommonPrefixes: res.prefixes, EncodingType: in.EncodingType,
	}
	if res.truncated {
		out.NextContinuationToken = ptr(res.next)
	}
	return out, nil
}

// ListObjects is the first version's listing (marker instead of tokens).
func (b *Backend) ListObjects(ctx context.Context, in *awss3.ListObjectsInput) (s3response.ListObjectsResult, error) {
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return s3response.ListObjectsResult{}, err
	}
	req := listReq{prefix: deref(in.Prefix), delim: deref(in.Delimiter), marker: deref(in.Marker), max: maxOf(in.MaxKeys)}
	res, err := b.list(ctx, c, deref(in.Bucket), req)
	if err != nil {
		return s3response.ListObjectsResult{}, err
	}
	mk := int32(min(req.max, maxKeys))
	out := s3response.ListObjectsResult{
		Name: in.Bucket, Prefix: in.Prefix, Marker: in.Marker, MaxKeys: &mk, Delimiter: in.Delimiter,
		IsTruncated: &res.truncated, Contents: res.objects, CommonPrefixes: res.prefixes, EncodingType: in.EncodingType,
	}
	if res.truncated {
		out.NextMarker = ptr(res.next)
	}
	return out, nil
}
