package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"syscall"

	"tessera/internal/block"
	"tessera/internal/placement"
)

// ErrCorrupt marks a record or key in the store that does not decode. Errors
// carrying it also match ErrIO, so they reach clients as EIO. Corruption is
// never retried.
var ErrCorrupt = errors.New("meta: corrupt record")

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w (%w)", fmt.Sprintf(format, args...), ErrCorrupt, ErrIO)
}

// recordV1 is the version byte every record written today starts with
// but the inode's, which is recordV2 (version 1 inodes still decode).
const (
	recordV1 = 1
	recordV2 = 2
)

// Limits a decoder enforces on variable-length fields.
const (
	// MaxTargetLen is the longest symlink target (PATH_MAX - 1).
	MaxTargetLen = 4095
	// MaxPolicyLen is the longest policy name.
	MaxPolicyLen = 255
	// MaxServerID is the longest block-server ID; other server fields are
	// limited to maxServerField bytes.
	MaxServerID    = 255
	maxServerField = 4096
	// XattrValueMax is the largest xattr value (as Linux: 64 KiB).
	XattrValueMax = 64 << 10
	// XattrNameMax is the longest xattr name.
	XattrNameMax = 255
)

// inodeRec is an inode as stored: the Inode plus the parent pointer kept for
// directories.
type inodeRec struct {
	Inode
	Parent Ino
	// composed: a block of the file was committed as a composition, so
	// readers of its recipe look compositions up (compose.go).
	composed bool
}

const inodeFixedLen = 2 + 8 + 4*4 + 8*4 + 4 + 8 + 4 + 8

const (
	flagHasInline   = 1
	flagHasReplicas = 2  // a replication-factor byte follows the inline data
	flagComposed    = 4  // some block of the file was committed composed (compose.go)
	flagHasSites    = 8  // a per-site replication spec follows the replicas byte
	flagGateway     = 16 // a gateway section follows (filesetrec.go)
	flagCachedRuns  = 32 // the gateway section's cached runs follow it
)

// MaxSitesLen is the longest per-site replication spec an inode keeps.
const MaxSitesLen = 1024

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeInode encodes rec (its Ino is the key's, not stored) in the
// version 2 layout: the fixed-width fields of version 1 as uvarints, atime
// and ctime as zigzag differences from mtime (one byte each for a file
// just made), so an empty file's record is ~35 bytes, not ~100: every
// file has one, and on etcd every byte of it is kept by each member.
func encodeInode(rec *inodeRec) []byte {
	b := make([]byte, 0, 48+len(rec.Policy)+len(rec.Target)+len(rec.Inline))
	b = append(b, recordV2, inodeFlags(rec))
	for _, v := range [...]uint64{rec.Gen, uint64(rec.Mode), uint64(rec.Uid), uint64(rec.Gid), uint64(rec.Nlink),
		rec.Size, uint64(rec.Mtime), zigzag(rec.Atime - rec.Mtime), zigzag(rec.Ctime - rec.Mtime),
		uint64(rec.Rdev), rec.Change, uint64(rec.BlockSize), uint64(rec.Parent)} {
		b = binary.AppendUvarint(b, v)
	}
	return appendInodeTail(b, rec)
}

// zigzag maps a signed difference to an unsigned one that is small when
// the difference is near 0 either way.
func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func inodeFlags(rec *inodeRec) byte {
	var flags byte
	if rec.HasInline {
		flags |= flagHasInline
	}
	if rec.Replicas != 0 {
		flags |= flagHasReplicas
	}
	if rec.composed {
		flags |= flagComposed
	}
	if rec.Sites != "" {
		flags |= flagHasSites
	}
	if rec.Gateway != nil {
		flags |= flagGateway
		if len(rec.Gateway.Cached) > 0 {
			flags |= flagCachedRuns
		}
	}
	return flags
}

// appendInodeTail appends what both layouts end with: policy, target,
// inline data and the optional sections their flags announce.
func appendInodeTail(b []byte, rec *inodeRec) []byte {
	b = appendString(b, rec.Policy)
	b = appendString(b, rec.Target)
	if rec.HasInline {
		b = appendBytes(b, rec.Inline)
	} else {
		b = append(b, 0)
	}
	if rec.Replicas != 0 {
		b = append(b, rec.Replicas)
	}
	if rec.Sites != "" {
		b = appendString(b, rec.Sites)
	}
	if rec.Gateway != nil {
		b = appendGateway(b, rec.Gateway)
		if len(rec.Gateway.Cached) > 0 {
			b = appendCachedRuns(b, rec.Gateway.Cached)
		}
	}
	return b
}

// reader decodes length-prefixed fields, remembering the first error.
type reader struct {
	b    []byte
	err  error
	what string
	ino  Ino // when not 0, the record is what's of this inode (formatted only on failure)
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		what := r.what
		if r.ino != 0 {
			what = fmt.Sprintf("%s %d", r.what, r.ino)
		}
		r.err = corruptf("%s record: %s", what, fmt.Sprintf(format, args...))
	}
}

// uvarintLen is the length of n's minimal uvarint (binary.AppendUvarint's,
// without making it).
func uvarintLen(n uint64) int { return (bits.Len64(n|1) + 6) / 7 }

func (r *reader) fixed(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail("truncated")
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) u32() uint32 {
	if s := r.fixed(4); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.fixed(8); s != nil {
		return binary.BigEndian.Uint64(s)
	}
	return 0
}

// uvarint reads a minimal uvarint of at most max.
func (r *reader) uvarint(max uint64, field string) uint64 {
	if r.err != nil {
		return 0
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 || k != uvarintLen(n) {
		r.fail("bad %s", field) // absent, overflowing or not minimal
		return 0
	}
	if n > max {
		r.fail("%s %d, max %d", field, n, max)
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) u32v(field string) uint32 { return uint32(r.uvarint(math.MaxUint32, field)) }

func (r *reader) u64v(field string) uint64 { return r.uvarint(math.MaxUint64, field) }

func (r *reader) bytes(max int, field string) []byte {
	if r.err != nil {
		return nil
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 || k != uvarintLen(n) {
		r.fail("bad %s length", field) // absent, overflowing or not minimal
		return nil
	}
	if n > uint64(max) {
		r.fail("%s of %d bytes, max %d", field, n, max)
		return nil
	}
	r.b = r.b[k:]
	return r.fixed(int(n))
}

func (r *reader) str(max int, field string) string { return string(r.bytes(max, field)) }

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

func (r *reader) version() {
	v := r.fixed(1)
	if r.err == nil && v[0] != recordV1 {
		r.fail("unknown version %d", v[0])
	}
}

// decodeInode decodes an inode record of inode ino, of either layout.
func decodeInode(ino Ino, b []byte) (*inodeRec, error) {
	r := reader{b: b, what: "inode", ino: ino}
	v := r.fixed(1)
	if r.err == nil && v[0] != recordV1 && v[0] != recordV2 {
		r.fail("unknown version %d", v[0])
	}
	flags := r.fixed(1)
	if r.err == nil && flags[0]&^(flagHasInline|flagHasReplicas|flagComposed|flagHasSites|flagGateway|flagCachedRuns) != 0 {
		r.fail("unknown flags %#x", flags[0])
	}
	rec := &inodeRec{}
	rec.Ino = ino
	if r.err == nil && v[0] == recordV2 {
		rec.Gen = r.u64v("gen")
		rec.Mode = r.u32v("mode")
		rec.Uid = r.u32v("uid")
		rec.Gid = r.u32v("gid")
		rec.Nlink = r.u32v("nlink")
		rec.Size = r.u64v("size")
		rec.Mtime = int64(r.u64v("mtime"))
		rec.Atime = rec.Mtime + unzigzag(r.u64v("atime"))
		rec.Ctime = rec.Mtime + unzigzag(r.u64v("ctime"))
		rec.Rdev = r.u32v("rdev")
		rec.Change = r.u64v("change")
		rec.BlockSize = r.u32v("block size")
		rec.Parent = Ino(r.u64v("parent"))
	} else {
		rec.Gen = r.u64()
		rec.Mode = r.u32()
		rec.Uid = r.u32()
		rec.Gid = r.u32()
		rec.Nlink = r.u32()
		rec.Size = r.u64()
		rec.Atime = int64(r.u64())
		rec.Mtime = int64(r.u64())
		rec.Ctime = int64(r.u64())
		rec.Rdev = r.u32()
		rec.Change = r.u64()
		rec.BlockSize = r.u32()
		rec.Parent = Ino(r.u64())
	}
	rec.Policy = r.str(MaxPolicyLen, "policy")
	rec.Target = r.str(MaxTargetLen, "target")
	inline := r.bytes(InlineMax, "inline data")
	if r.err == nil && flags[0]&flagHasReplicas != 0 {
		if v := r.fixed(1); v != nil {
			rec.Replicas = v[0]
		}
		if r.err == nil && (rec.Replicas == 0 || rec.Replicas > MaxReplicas) {
			r.fail("replication factor %d", rec.Replicas)
		}
	}
	if r.err == nil && flags[0]&flagHasSites != 0 {
		if flags[0]&flagHasReplicas == 0 {
			r.fail("site spec without a replication factor")
		}
		rec.Sites = r.str(MaxSitesLen, "site spec")
		if r.err == nil {
			if sp, err := placement.ParseSpec(rec.Sites); err != nil || len(sp.Sites) == 0 || sp.String() != rec.Sites || sp.N != int(rec.Replicas) {
				r.fail("site spec %q for %d copies", rec.Sites, rec.Replicas)
			}
		}
	}
	if r.err == nil && flags[0]&flagGateway != 0 {
		rec.Gateway = readGateway(&r)
		if r.err == nil && flags[0]&flagCachedRuns != 0 {
			rec.Gateway.Cached = readCachedRuns(&r)
			if r.err == nil {
				if err := checkRanges(rec.Gateway); err != nil {
					r.fail("gateway section: %v", err)
				}
			}
		}
	} else if r.err == nil && flags[0]&flagCachedRuns != 0 {
		r.fail("cached runs without a gateway section")
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if !validType(rec.Mode) {
		return nil, corruptf("inode %d record: bad file type %#o", ino, rec.Mode&syscall.S_IFMT)
	}
	if rec.BlockSize == 0 {
		return nil, corruptf("inode %d record: block size 0", ino)
	}
	rec.composed = flags[0]&flagComposed != 0
	if flags[0]&flagHasInline != 0 {
		rec.HasInline = true
		rec.Inline = append([]byte{}, inline...)
	} else if len(inline) != 0 {
		return nil, corruptf("inode %d record: inline data without the inline flag", ino)
	}
	return rec, nil
}

// validType reports whether mode's type bits name a known file type.
func validType(mode uint32) bool {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK, syscall.S_IFCHR,
		syscall.S_IFBLK, syscall.S_IFIFO, syscall.S_IFSOCK:
		return true
	}
	return false
}

// encodeDentry encodes a directory entry pointing at ino of the given mode.
func encodeDentry(ino Ino, mode uint32) []byte {
	b := make([]byte, 10)
	b[0] = recordV1
	binary.BigEndian.PutUint64(b[1:], uint64(ino))
	b[9] = byte((mode & syscall.S_IFMT) >> 12)
	return b
}

// decodeDentry returns the child inode and its type bits (S_IFMT).
func decodeDentry(b []byte) (Ino, uint32, error) {
	if len(b) != 10 || b[0] != recordV1 {
		return 0, 0, corruptf("dentry record %x: want version 1, 10 bytes", b)
	}
	mode := uint32(b[9]) << 12
	if b[9] > 0xf || !validType(mode) {
		return 0, 0, corruptf("dentry record %x: bad file type", b)
	}
	ino := Ino(binary.BigEndian.Uint64(b[1:]))
	if ino == 0 {
		return 0, 0, corruptf("dentry record %x: inode 0", b)
	}
	return ino, mode, nil
}

// encodeSegment encodes a segment's hashes, trimming trailing holes; it
// returns nil when every entry is a hole (the segment is to be deleted).
func encodeSegment(hs []block.Hash) []byte {
	n := len(hs)
	for n > 0 && hs[n-1].IsZero() {
		n--
	}
	if n == 0 {
		return nil
	}
	b := make([]byte, 1, 1+n*block.HashSize)
	b[0] = recordV1
	for i := range n {
		b = append(b, hs[i][:]...)
	}
	return b
}

// decodeSegment decodes a segment into its hashes (length 1..SegmentBlocks).
func decodeSegment(b []byte) ([]block.Hash, error) {
	if len(b) < 1+block.HashSize || b[0] != recordV1 || (len(b)-1)%block.HashSize != 0 {
		return nil, corruptf("segment record of %d bytes: want version 1 + n*%d bytes", len(b), block.HashSize)
	}
	n := (len(b) - 1) / block.HashSize
	if n > SegmentBlocks {
		return nil, corruptf("segment record of %d entries, max %d", n, SegmentBlocks)
	}
	hs := make([]block.Hash, n)
	for i := range hs {
		copy(hs[i][:], b[1+i*block.HashSize:])
	}
	if hs[n-1].IsZero() {
		return nil, corruptf("segment record ends in a hole")
	}
	return hs, nil
}

// encodeXattr encodes an xattr value.
func encodeXattr(v []byte) []byte { return append([]byte{recordV1}, v...) }

// decodeXattr returns the value of an xattr record (a copy).
func decodeXattr(b []byte) ([]byte, error) {
	if len(b) < 1 || b[0] != recordV1 || len(b)-1 > XattrValueMax {
		return nil, corruptf("xattr record of %d bytes", len(b))
	}
	return append([]byte{}, b[1:]...), nil
}

// encodeOrphan encodes an orphan marker set at unix ns t; linkable marks
// an O_TMPFILE inode, which Link may name (a trailing byte set to 1).
func encodeOrphan(t int64, linkable bool) []byte {
	b := binary.BigEndian.AppendUint64([]byte{recordV1}, uint64(t))
	if linkable {
		b = append(b, 1)
	}
	return b
}

// decodeOrphan returns the time an orphan marker was set and whether the
// orphan may be linked.
func decodeOrphan(b []byte) (t int64, linkable bool, err error) {
	if (len(b) != 9 && (len(b) != 10 || b[9] != 1)) || b[0] != recordV1 {
		return 0, false, corruptf("orphan record %x", b)
	}
	return int64(be64(b[1:])), len(b) == 10, nil
}

// encodeRef encodes a block's reference count (at least 1: a count of 0
// is no record).
func encodeRef(n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{recordV1}, n)
}

// decodeRef decodes a reference-count record.
func decodeRef(b []byte) (uint64, error) {
	if len(b) != 9 || b[0] != recordV1 || be64(b[1:]) == 0 {
		return 0, corruptf("reference record %x", b)
	}
	return be64(b[1:]), nil
}

// encodeRelease encodes a release record: the key says it all.
func encodeRelease() []byte { return []byte{recordV1} }

// decodeRelease checks a release record.
func decodeRelease(b []byte) error {
	if len(b) != 1 || b[0] != recordV1 {
		return corruptf("release record %x", b)
	}
	return nil
}

// encodeU64 encodes a counter, the epoch or the format version.
func encodeU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// decodeU64 decodes what encodeU64 wrote.
func decodeU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, corruptf("counter record of %d bytes, want 8", len(b))
	}
	return be64(b), nil
}

// encodeServer encodes a block-server record (its ID is the key's).
func encodeServer(s *Server) []byte {
	b := []byte{recordV1}
	for _, f := range []string{s.Addr, s.Dir, s.Host, s.Rack, s.Site, s.State} {
		b = appendString(b, f)
	}
	return binary.BigEndian.AppendUint64(b, uint64(s.Seen))
}

// decodeServer decodes the record of server id.
func decodeServer(id string, b []byte) (Server, error) {
	r := reader{b: b, what: "server " + id}
	r.version()
	s := Server{ID: id}
	for _, f := range []*string{&s.Addr, &s.Dir, &s.Host, &s.Rack, &s.Site, &s.State} {
		*f = r.str(maxServerField, "field")
	}
	s.Seen = int64(r.u64())
	if err := r.end(); err != nil {
		return Server{}, err
	}
	return s, nil
}
