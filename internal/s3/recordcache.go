package s3

import (
	"sync"

	"tessera/internal/meta"
)

// Records read lately, kept by the inode's identity and change counter:
// meta bumps an inode's Change with every change of its content or
// attributes, xattrs included (meta's SetXattr and RemoveXattr touch the
// inode), so a record read after a lookup that saw Change c is the record
// of every later lookup that sees c again. A HEAD whose lookup finds the
// object unchanged makes no second meta call, whoever changed what
// elsewhere: there is nothing to expire and nothing to call back. The
// record kept is the xattr as read (or its absence); readRecord checks it
// against the looked-up size and mtime as for one just read.

// maxRecordCache bounds the bytes of records kept (then all are dropped):
// records are at most maxRecord, most about 100 bytes.
const maxRecordCache = 8 << 20

type recordKey struct {
	ino    meta.Ino
	gen    uint64
	change uint64
}

type cachedRecord struct {
	r    record
	ok   bool // the xattr was there and parsed
	size int
}

type recordEntry struct {
	key recordKey
	cachedRecord
}

type recordCache struct {
	mu    sync.Mutex
	m     map[meta.Ino]recordEntry
	bytes int
}

func keyOf(in *meta.Inode) recordKey { return recordKey{ino: in.Ino, gen: in.Gen, change: in.Change} }

// get returns in's record if one was kept for in's Gen and Change.
func (rc *recordCache) get(in *meta.Inode) (cachedRecord, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.m[in.Ino]
	if !ok || e.key != keyOf(in) {
		return cachedRecord{}, false
	}
	return e.cachedRecord, true
}

// put keeps cr as the record of in (as looked up before it was read).
// The record's Meta map is shared by every reader: nobody changes it.
func (rc *recordCache) put(in *meta.Inode, cr cachedRecord) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil || rc.bytes+cr.size > maxRecordCache {
		rc.m = make(map[meta.Ino]recordEntry)
		rc.bytes = 0
	}
	if old, ok := rc.m[in.Ino]; ok {
		rc.bytes -= old.size
	}
	rc.m[in.Ino] = recordEntry{keyOf(in), cr}
	rc.bytes += cr.size
}

// recordBytes estimates what r takes kept.
func recordBytes(r *record) int {
	return 64 + len(r.ETag) + len(r.ContentType) + metaSize(r.Meta)
}
