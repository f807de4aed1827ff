package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"syscall"
	"testing"

	"tessera/internal/block"
)

// Fuzz targets for every decoder and key parser: none may panic, every
// rejection is ErrCorrupt, and whatever decodes re-encodes to the same bytes.
// `go test` runs the seed corpus; `go test -fuzz FuzzDecodeInode` explores.

func sampleInode() *inodeRec {
	rec := &inodeRec{Parent: 1}
	rec.Attr = Attr{Ino: 7, Gen: 1, Mode: syscall.S_IFREG | 0644, Uid: 1, Gid: 2, Nlink: 1, Size: 11,
		Atime: -1, Mtime: 2, Ctime: 3, Rdev: 4, Change: 5, BlockSize: 4096, Policy: "posix"}
	rec.HasInline, rec.Inline = true, []byte("hello world")
	return rec
}

// encodeInodeV1 encodes rec in the version 1 layout, which inode records
// written before version 2 have.
func encodeInodeV1(rec *inodeRec) []byte {
	b := make([]byte, 0, inodeFixedLen+3+len(rec.Policy)+len(rec.Target)+len(rec.Inline))
	b = append(b, recordV1, inodeFlags(rec))
	be := binary.BigEndian
	b = be.AppendUint64(b, rec.Gen)
	b = be.AppendUint32(b, rec.Mode)
	b = be.AppendUint32(b, rec.Uid)
	b = be.AppendUint32(b, rec.Gid)
	b = be.AppendUint32(b, rec.Nlink)
	b = be.AppendUint64(b, rec.Size)
	b = be.AppendUint64(b, uint64(rec.Atime))
	b = be.AppendUint64(b, uint64(rec.Mtime))
	b = be.AppendUint64(b, uint64(rec.Ctime))
	b = be.AppendUint32(b, rec.Rdev)
	b = be.AppendUint64(b, rec.Change)
	b = be.AppendUint32(b, rec.BlockSize)
	b = be.AppendUint64(b, uint64(rec.Parent))
	return appendInodeTail(b, rec)
}

func wantCorrupt(t *testing.T, err error) {
	t.Helper()
	if err != nil && (!errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrIO)) {
		t.Fatalf("rejection %v is not ErrCorrupt and ErrIO", err)
	}
}

func FuzzDecodeInode(f *testing.F) {
	f.Add(encodeInode(sampleInode()))
	dir := &inodeRec{Parent: 1}
	dir.Attr = Attr{Mode: syscall.S_IFDIR | 0755, Nlink: 2, BlockSize: 1}
	f.Add(encodeInode(dir))
	lnk := &inodeRec{}
	lnk.Attr = Attr{Mode: syscall.S_IFLNK | 0777, BlockSize: 1}
	lnk.Target = "a/b"
	f.Add(encodeInode(lnk))
	sited := sampleInode()
	sited.Replicas, sited.Sites = 3, "a:1,b:1,c:1"
	f.Add(encodeInode(sited))
	f.Add(encodeInodeV1(sampleInode()))
	f.Add(encodeInodeV1(sited))
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeInode(9, b)
		wantCorrupt(t, err)
		if err != nil {
			return
		}
		enc := encodeInode
		if b[0] == recordV1 {
			enc = encodeInodeV1
		}
		if !bytes.Equal(enc(rec), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
		if again, err := decodeInode(9, encodeInode(rec)); err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("%x re-encoded in version 2 decodes to %+v, %v; want %+v", b, again, err, rec)
		}
	})
}

// A site spec round-trips; a record without one (written before the field
// existed) still decodes; a spec that disagrees with the replicas byte or is
// not canonical is corrupt.
func TestInodeSitesRecord(t *testing.T) {
	rec := sampleInode()
	rec.Replicas, rec.Sites = 3, "a:1,b:2"
	if got, err := decodeInode(rec.Ino, encodeInode(rec)); err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	old := sampleInode()
	old.Replicas = 2
	b := encodeInode(old)
	if b[1]&flagHasSites != 0 {
		t.Fatal("a record without sites has the sites flag")
	}
	if got, err := decodeInode(old.Ino, b); err != nil || got.Sites != "" || got.Replicas != 2 {
		t.Fatalf("old record: %+v, %v", got, err)
	}
	for _, bad := range []struct {
		replicas uint8
		sites    string
	}{{4, "a:1,b:2"}, {3, "b:2,a:1"}, {3, "3"}, {3, "a:1,b:2,"}} {
		r := sampleInode()
		r.Replicas, r.Sites = bad.replicas, bad.sites
		if _, err := decodeInode(r.Ino, encodeInode(r)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("replicas %d sites %q: %v, want ErrCorrupt", bad.replicas, bad.sites, err)
		}
	}
	noRepl := sampleInode()
	noRepl.Sites = "a:1"
	if _, err := decodeInode(noRepl.Ino, encodeInode(noRepl)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("sites without replicas: %v, want ErrCorrupt", err)
	}
}

func TestInodeRoundTrip(t *testing.T) {
	rec := sampleInode()
	got, err := decodeInode(rec.Ino, encodeInode(rec))
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// A record written in version 1 still reads the same.
	if got, err := decodeInode(rec.Ino, encodeInodeV1(rec)); err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("version 1 record: %+v, %v", got, err)
	}
	// Times far apart, before 1970 and at the ends of int64 round-trip.
	for _, ts := range [][3]int64{{-1, 1 << 62, 3}, {math.MinInt64, math.MaxInt64, 0}, {math.MaxInt64, math.MinInt64, -5}} {
		r := sampleInode()
		r.Atime, r.Mtime, r.Ctime = ts[0], ts[1], ts[2]
		if got, err := decodeInode(r.Ino, encodeInode(r)); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("times %v: %+v, %v", ts, got, err)
		}
	}
	// What an empty file costs: the point of version 2.
	file := &inodeRec{Parent: 1 << 20}
	now := int64(1_795_000_000_000_000_000)
	file.Attr = Attr{Gen: 1, Mode: syscall.S_IFREG | 0o644, Uid: 1000, Gid: 1000, Nlink: 1, Atime: now, Mtime: now, Ctime: now,
		Change: 1 << 20, BlockSize: 4 << 20, Policy: ""}
	if n, n1 := len(encodeInode(file)), len(encodeInodeV1(file)); n > 40 {
		t.Errorf("an empty file's inode record is %d bytes (version 1: %d); want at most 40", n, n1)
	}
	b := encodeInode(rec)
	for _, bad := range [][]byte{b[:len(b)-1], append(b, 0), append([]byte{9}, b[1:]...)} {
		if _, err := decodeInode(1, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

func FuzzDecodeDentry(f *testing.F) {
	f.Add(encodeDentry(42, syscall.S_IFDIR))
	f.Add(encodeDentry(1, syscall.S_IFSOCK))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		ino, typ, err := decodeDentry(b)
		wantCorrupt(t, err)
		if err == nil && !bytes.Equal(encodeDentry(ino, typ), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
	})
}

func FuzzDecodeSegment(f *testing.F) {
	f.Add(encodeSegment([]block.Hash{{}, block.Sum([]byte("x"))}))
	f.Add(append([]byte{1}, make([]byte, 64)...))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := decodeSegment(b)
		wantCorrupt(t, err)
		if err == nil && !bytes.Equal(encodeSegment(hs), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
	})
}

func TestSegmentTrim(t *testing.T) {
	h := block.Sum([]byte("x"))
	if b := encodeSegment([]block.Hash{{}, {}}); b != nil {
		t.Fatalf("all-hole segment encodes to %x", b)
	}
	hs, err := decodeSegment(encodeSegment([]block.Hash{h, {}, {}}))
	if err != nil || len(hs) != 1 || hs[0] != h {
		t.Fatalf("trimmed segment: %v, %v", hs, err)
	}
}

func FuzzDecodeServer(f *testing.F) {
	f.Add(encodeServer(&Server{Addr: "127.0.0.1:1", Dir: "/d", Host: "h", Rack: "r", Site: "s", State: "up", Seen: 9}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeServer("b0", b)
		wantCorrupt(t, err)
		if err == nil && !bytes.Equal(encodeServer(&s), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
	})
}

func FuzzDecodeSmall(f *testing.F) {
	f.Add(encodeXattr([]byte("v")))
	f.Add(encodeOrphan(5, false))
	f.Add(encodeOrphan(5, true))
	f.Add(encodeU64(7))
	f.Add(encodeRef(3))
	f.Add(encodeRelease())
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := decodeRef(b); err == nil {
			if !bytes.Equal(encodeRef(n), b) {
				t.Fatalf("reference re-encoding %x differs", b)
			}
		} else {
			wantCorrupt(t, err)
		}
		if err := decodeRelease(b); err == nil {
			if !bytes.Equal(encodeRelease(), b) {
				t.Fatalf("release re-encoding %x differs", b)
			}
		} else {
			wantCorrupt(t, err)
		}
		if v, err := decodeXattr(b); err == nil {
			if !bytes.Equal(encodeXattr(v), b) {
				t.Fatalf("xattr re-encoding %x differs", b)
			}
		} else {
			wantCorrupt(t, err)
		}
		if v, linkable, err := decodeOrphan(b); err == nil {
			if !bytes.Equal(encodeOrphan(v, linkable), b) {
				t.Fatalf("orphan re-encoding %x differs", b)
			}
		} else {
			wantCorrupt(t, err)
		}
		if v, err := decodeU64(b); err == nil {
			if !bytes.Equal(encodeU64(v), b) {
				t.Fatalf("counter re-encoding %x differs", b)
			}
		} else {
			wantCorrupt(t, err)
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add(inodeKey(1))
	f.Add(dentryKey(1, "name"))
	f.Add(segmentKey(3, 4))
	f.Add(xattrKey(5, "user.x"))
	f.Add(orphanKey(6))
	f.Add(serverKey("b0"))
	f.Add(counterKey(ctrBytes, 17))
	f.Add(refKey(block.Sum([]byte("x"))))
	f.Add(releaseKey(1234, block.Sum([]byte("y"))))
	f.Fuzz(func(t *testing.T, k []byte) {
		if h, err := parseRefKey(k); err == nil && !bytes.Equal(refKey(h), k) {
			t.Fatalf("reference key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if at, h, err := parseReleaseKey(k); err == nil && !bytes.Equal(releaseKey(at, h), k) {
			t.Fatalf("release key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if ino, err := parseInodeKey(k); err == nil && !bytes.Equal(inodeKey(ino), k) {
			t.Fatalf("inode key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if ino, err := parseOrphanKey(k); err == nil && !bytes.Equal(orphanKey(ino), k) {
			t.Fatalf("orphan key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if p, name, err := parseDentryKey(k); err == nil && !bytes.Equal(dentryKey(p, name), k) {
			t.Fatalf("dentry key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if ino, name, err := parseXattrKey(k); err == nil && !bytes.Equal(xattrKey(ino, name), k) {
			t.Fatalf("xattr key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if ino, seg, err := parseSegmentKey(k); err == nil && !bytes.Equal(segmentKey(ino, seg), k) {
			t.Fatalf("segment key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if id, err := parseServerKey(k); err == nil && !bytes.Equal(serverKey(id), k) {
			t.Fatalf("server key %x", k)
		} else {
			wantCorrupt(t, err)
		}
		if kind, shard, err := parseCounterKey(k); err == nil && !bytes.Equal(counterKey(kind, Ino(shard)), k) {
			t.Fatalf("counter key %x", k)
		} else {
			wantCorrupt(t, err)
		}
	})
}

func FuzzDecodeProgress(f *testing.F) {
	f.Add(encodeProgress(&MoverProgress{Round: 1, At: -2, Running: true, Blocks: 3, UnderReplicated: 4,
		Misplaced: 5, BytesToMove: 6, BytesMoved: 7, Err: "e"}))
	f.Add(encodeProgress(&MoverProgress{}))
	f.Add(encodeProgress(&MoverProgress{Round: 2, Lost: 3, LostBlocks: []LostBlock{{Hash: block.Sum([]byte("x")), Inos: []Ino{7, 9}}, {}}}))
	f.Add(encodeProgress(&MoverProgress{Round: 3, UnderBySite: []SiteCount{{Site: "a", N: 2}, {Site: "c", N: 9, Bytes: 7, Since: 1}}, Lost: 1, LostBlocks: []LostBlock{{}}}))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeProgress(b)
		wantCorrupt(t, err)
		if err == nil && !bytes.Equal(encodeProgress(&p), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
	})
}

// TestProgressLostRoundTrip: the lost blocks and their inodes survive the
// record, and a record written before the section existed still decodes.
func TestProgressLostRoundTrip(t *testing.T) {
	want := MoverProgress{Round: 4, Err: "x", Lost: 20,
		LostBlocks: []LostBlock{{Hash: block.Sum([]byte("a")), Inos: []Ino{5, 6}}, {Hash: block.Sum([]byte("b"))}}}
	got, err := decodeProgress(encodeProgress(&want))
	if err != nil || got.Lost != 20 || len(got.LostBlocks) != 2 || got.LostBlocks[0].Hash != want.LostBlocks[0].Hash ||
		len(got.LostBlocks[0].Inos) != 2 || got.LostBlocks[0].Inos[1] != 6 || got.LostBlocks[1].Hash != want.LostBlocks[1].Hash {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, want)
	}
	old := encodeProgress(&MoverProgress{Round: 4, Err: "x"})
	if got, err := decodeProgress(old); err != nil || got.Round != 4 || got.Lost != 0 {
		t.Fatalf("record without the lost section = %+v, %v", got, err)
	}
}

// TestProgressSitesRoundTrip: the per-site counts survive the record, next
// to a lost section; records without them decode as before.
func TestProgressSitesRoundTrip(t *testing.T) {
	want := MoverProgress{Round: 5, UnderReplicated: 3, UnderBySite: []SiteCount{{Site: "siteA", N: 1, Bytes: 4096, Since: 1e18}, {Site: "siteC", N: 3, Bytes: 12288, Since: 2e18}},
		Lost: 1, LostBlocks: []LostBlock{{Hash: block.Sum([]byte("a"))}}}
	got, err := decodeProgress(encodeProgress(&want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, want)
	}
	b := encodeProgress(&MoverProgress{Round: 5})
	if b[1]&progressSites != 0 {
		t.Fatal("a record without sites has the sites flag")
	}
	// A record of before the lag fields: counts only.
	one := MoverProgress{Round: 6, UnderBySite: []SiteCount{{Site: "siteB", N: 2, Bytes: 9, Since: 9}}}
	rec := encodeProgress(&one)
	rec[1] &^= progressLag
	rec = rec[:len(rec)-16] // the one site's bytes and since
	if got, err := decodeProgress(rec); err != nil || !reflect.DeepEqual(got.UnderBySite, []SiteCount{{Site: "siteB", N: 2}}) {
		t.Fatalf("a record without the lag fields = %+v, %v", got, err)
	}
	bad := encodeProgress(&MoverProgress{UnderBySite: []SiteCount{{Site: "", N: 1}}})
	if _, err := decodeProgress(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty site name: %v, want ErrCorrupt", err)
	}
}

func TestProgressErrCut(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), maxProgressErr+10))
	p, err := decodeProgress(encodeProgress(&MoverProgress{Err: long}))
	if err != nil || len(p.Err) != maxProgressErr {
		t.Fatalf("long error: %d bytes, %v", len(p.Err), err)
	}
}

// TestUvarintLen: uvarintLen is the length binary.AppendUvarint makes, at
// every boundary of a 7-bit group.
func TestUvarintLen(t *testing.T) {
	for shift := 0; shift < 64; shift++ {
		for _, n := range []uint64{1<<shift - 1, 1 << shift, 1<<shift + 1} {
			if got, want := uvarintLen(n), len(binary.AppendUvarint(nil, n)); got != want {
				t.Fatalf("uvarintLen(%d) = %d, want %d", n, got, want)
			}
		}
	}
	if got := uvarintLen(math.MaxUint64); got != 10 {
		t.Fatalf("uvarintLen(max) = %d, want 10", got)
	}
}

// TestInodeRecordRefusesNonMinimalUvarint: a field of a layout-2 inode
// record in a longer uvarint than it needs is corrupt, not read.
func TestInodeRecordRefusesNonMinimalUvarint(t *testing.T) {
	rec := &inodeRec{Parent: RootIno}
	rec.Ino, rec.Gen, rec.Mode, rec.Nlink, rec.BlockSize = 9, 1, syscall.S_IFREG|0o644, 1, 1<<20
	b := encodeInode(rec)
	if b[0] != recordV2 || b[2] != 1 {
		t.Fatalf("record %x: want version 2 and gen 1 in one byte at offset 2", b)
	}
	if _, err := decodeInode(9, b); err != nil {
		t.Fatal(err)
	}
	bad := append(append(append([]byte{}, b[:2]...), 0x81, 0x00), b[3:]...) // gen 1 in two bytes
	if _, err := decodeInode(9, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("gen in a non-minimal uvarint: %v, want ErrCorrupt", err)
	}
}
