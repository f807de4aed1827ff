package s3

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// RecordXattr holds an object's S3 record: its ETag (with the size and
// mtime it belongs to), content type and user metadata.
const RecordXattr = "user.tessera.s3"

// maxRecord bounds a record read back (S3 keeps at most 2 KiB of user
// metadata; a record past this is ignored, as one never written).
const maxRecord = 8 << 10

// maxMetadata bounds the user metadata a PUT may set (S3's 2 KiB).
const maxMetadata = 2 << 10

// record is an object's S3 record.
type record struct {
	ETag        string            `json:"etag"`
	Size        uint64            `json:"size"`
	Mtime       int64             `json:"mtime"`
	ContentType string            `json:"ct,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	// Parts is the part count of a multipart upload's object (0: one PUT).
	Parts int `json:"parts,omitempty"`
}

// metaSize is the bytes user metadata takes, as S3 counts them.
func metaSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// readRecord returns in's record, or one made from its attributes when it
// has none or the file changed since (written through a mount): the ETag
// is then derived from the inode number, size and mtime.
func (b *Backend) readRecord(ctx context.Context, in *meta.Inode) record {
	cr, hit := b.records.get(in)
	if !hit {
		val, err := b.v.GetXattr(ctx, asRecords, in.Ino, RecordXattr)
		cr.ok = err == nil && len(val) <= maxRecord && json.Unmarshal(val, &cr.r) == nil
		if !cr.ok {
			cr.r = record{}
		}
		cr.size = recordBytes(&cr.r)
		// A failure other than no record at all (a meta call that did not
		// answer) is not kept: the next request asks again.
		if err == nil || errors.Is(err, syscall.ENODATA) {
			b.records.put(in, cr)
		}
	}
	r := cr.r
	if cr.ok && r.Size == in.Size && r.Mtime == in.Mtime && r.ETag != "" {
		return r
	}
	var buf [24]byte
	binary.BigEndian.PutUint64(buf[0:], uint64(in.Ino))
	binary.BigEndian.PutUint64(buf[8:], in.Size)
	binary.BigEndian.PutUint64(buf[16:], uint64(in.Mtime))
	sum := md5.Sum(buf[:])
	return record{ETag: quote(hex.EncodeToString(sum[:])), Size: in.Size, Mtime: in.Mtime, ContentType: r.ContentType, Meta: r.Meta}
}

// writeRecord stores r as ino's record, with the size and mtime ino has
// now: those of in when the caller knows them (the reply to its own
// commit of a file nobody else has yet; in.Ino 0: asked for).
func (b *Backend) writeRecord(ctx context.Context, c caller, ino meta.Ino, in meta.Inode, r record) (meta.Inode, error) {
	if in.Ino != ino {
		var err error
		if in, err = b.v.GetAttr(ctx, ino); err != nil {
			return in, err
		}
	}
	r.Size, r.Mtime = in.Size, in.Mtime
	val, err := json.Marshal(r)
	if err != nil {
		return in, err
	}
	if len(val) > maxRecord {
		return in, fmt.Errorf("an object record of %d bytes (at most %d)", len(val), maxRecord)
	}
	return in, b.v.SetXattr(ctx, asRecords, ino, RecordXattr, val, 0)
}

func quote(s string) string { return `"` + s + `"` }

// mtime is in's modification time.
func mtime(in *meta.Inode) time.Time { return time.Unix(0, in.Mtime) }
