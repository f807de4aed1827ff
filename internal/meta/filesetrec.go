package meta

import (
	"encoding/binary"
	"fmt"
	"time"
)

// pfxFileset keys a fileset record by its root inode ("g" root).
const pfxFileset = 'g'

func filesetKey(root Ino) []byte { return inoKey(pfxFileset, root) }

func parseFilesetKey(k []byte) (Ino, error) { return parseInoKey(pfxFileset, k, "fileset") }

// encodeFileset encodes a fileset record (its Root is the key's).
func encodeFileset(f *Fileset) []byte {
	b := []byte{recordV1}
	b = appendString(b, f.Home)
	b = appendString(b, string(f.Mode))
	b = binary.BigEndian.AppendUint64(b, uint64(f.ValidityLag))
	b = binary.BigEndian.AppendUint64(b, uint64(f.SyncLag))
	b = appendString(b, f.Prefetch)
	b = appendString(b, f.Conflicts)
	b = appendString(b, f.State)
	return binary.BigEndian.AppendUint64(b, uint64(f.Created))
}

// decodeFileset decodes the record of the fileset rooted at root.
func decodeFileset(root Ino, b []byte) (Fileset, error) {
	r := reader{b: b, what: fmt.Sprintf("fileset %d", root)}
	r.version()
	f := Fileset{Root: root}
	f.Home = r.str(MaxHomeURL, "home")
	f.Mode = FilesetMode(r.str(maxFilesetField, "mode"))
	f.ValidityLag = time.Duration(r.u64())
	f.SyncLag = time.Duration(r.u64())
	f.Prefetch = r.str(maxFilesetField, "prefetch")
	f.Conflicts = r.str(maxFilesetField, "conflicts")
	f.State = r.str(maxFilesetField, "state")
	f.Created = int64(r.u64())
	if err := r.end(); err != nil {
		return Fileset{}, err
	}
	// A stored record is complete: Normalize must find nothing to fill.
	if g := f; g.Normalize() != nil || g != f || f.ValidityLag <= 0 || f.SyncLag <= 0 {
		return Fileset{}, corruptf("fileset %d record: bad or missing settings", root)
	}
	return f, nil
}

// appendGateway appends an inode's gateway section (flagGateway):
// fileset 8 | state 1 | validated 8 | home mtime 8 | home ctime 8 |
// home size 8 | home path str | token str.
func appendGateway(b []byte, g *GatewayInfo) []byte {
	be := binary.BigEndian
	b = be.AppendUint64(b, uint64(g.Fileset))
	b = append(b, byte(g.State))
	b = be.AppendUint64(b, uint64(g.Validated))
	b = be.AppendUint64(b, uint64(g.HomeMtime))
	b = be.AppendUint64(b, uint64(g.HomeCtime))
	b = be.AppendUint64(b, g.HomeSize)
	b = appendString(b, g.HomePath)
	return appendString(b, g.Token)
}

// readGateway reads what appendGateway wrote.
func readGateway(r *reader) *GatewayInfo {
	g := &GatewayInfo{}
	g.Fileset = Ino(r.u64())
	if s := r.fixed(1); s != nil {
		g.State = CacheState(s[0])
	}
	g.Validated = int64(r.u64())
	g.HomeMtime = int64(r.u64())
	g.HomeCtime = int64(r.u64())
	g.HomeSize = r.u64()
	g.HomePath = r.str(MaxHomePath, "home path")
	g.Token = r.str(MaxToken, "change token")
	if r.err == nil && (g.Fileset == 0 || g.State < CachePlaceholder || g.State > CacheCached) {
		r.fail("gateway section: fileset %d, cache state %d", g.Fileset, g.State)
	}
	return g
}

// appendCachedRuns appends a partial file's cached runs (flagCachedRuns,
// after the gateway section): count 4 | (first 8 | end 8)*. A flag rather
// than a field keeps the sections written before it decoding unchanged.
func appendCachedRuns(b []byte, rs []BlockRange) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, uint32(len(rs)))
	for _, x := range rs {
		b = be.AppendUint64(b, x.First)
		b = be.AppendUint64(b, x.End)
	}
	return b
}

// readCachedRuns reads what appendCachedRuns wrote.
func readCachedRuns(r *reader) []BlockRange {
	n := r.u32()
	if r.err == nil && (n == 0 || n > MaxCachedRanges) {
		r.fail("gateway section: %d cached runs", n)
		return nil
	}
	rs := make([]BlockRange, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		rs = append(rs, BlockRange{First: r.u64(), End: r.u64()})
	}
	return rs
}
