package s3

import (
	"strings"
	"sync"
	"time"

	"tessera/internal/meta"
)

// Buckets looked up lately: a request's bucket is its first lookup (with
// the permission check of the serving root before it), two meta calls of
// a HEAD's four. A bucket found is kept bucketTTL (on the backend's
// clock) for the same identity: a bucket removed or replaced by another
// client is seen within that time (a request meanwhile finds its keys
// gone), as S3's own bucket operations are eventually consistent; those
// made and removed through this endpoint are seen at once. A missing
// bucket is not kept. The attributes kept are the directory's at the
// lookup, and the request's permission checks on the bucket use them
// (vfs.WithFresh): a chmod or chown of a bucket's directory applies to
// S3 requests within bucketTTL, as an NFS client's attribute cache does.

// bucketTTL is how long a bucket found is kept.
const bucketTTL = time.Second

// maxCachedBuckets bounds the entries kept (then all are dropped).
const maxCachedBuckets = 4096

type bucketKey struct {
	base     meta.Ino
	name     string
	uid, gid uint32
}

type cachedBucket struct {
	in    meta.Inode
	until time.Time
}

type bucketCache struct {
	mu sync.Mutex
	m  map[bucketKey]cachedBucket
}

func (bc *bucketCache) get(k bucketKey, now time.Time) (meta.Inode, bool) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	e, ok := bc.m[k]
	if !ok || !now.Before(e.until) {
		return meta.Inode{}, false
	}
	return e.in, true
}

func (bc *bucketCache) put(k bucketKey, in meta.Inode, now time.Time) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.m == nil || len(bc.m) >= maxCachedBuckets {
		bc.m = make(map[bucketKey]cachedBucket)
	}
	k.name = strings.Clone(k.name) // may be a view of the request's buffer, reused later
	bc.m[k] = cachedBucket{in: in, until: now.Add(bucketTTL)}
}

// forget drops bucket name of base, for every identity.
func (bc *bucketCache) forget(base meta.Ino, name string) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	for k := range bc.m {
		if k.base == base && k.name == name {
			delete(bc.m, k)
		}
	}
}
