package nfs

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"testing"
)

// sendAll sends the records on rc and checks that every reply is OK.
func sendAll(t *testing.T, rc *rawConn, recs [][]byte) map[uint32][]byte {
	t.Helper()
	if _, err := rc.c.Write(bytes.Join(recs, nil)); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(len(recs))
	for xid, r := range res {
		if s := st(r); s != nfsOK {
			t.Fatalf("call %d: status %d", xid, s)
		}
	}
	return res
}

// readBack reads n bytes of fh on rc in 64 KiB READs.
func readBack(t *testing.T, rc *rawConn, fh []byte, n int) []byte {
	t.Helper()
	var got []byte
	for off := 0; off < n; off += 64 << 10 {
		s, d := readData(t, rc.one(0, 0, procNFSRead, readArgsOf(fh, uint64(off), 64<<10)))
		if s != nfsOK {
			t.Fatalf("READ at %d: status %d", off, s)
		}
		got = append(got, d...)
	}
	return got
}

// TestOutOfOrderWritesUploadEachBlockOnce: UNSTABLE WRITEs of quarter
// blocks sent out of offset order (a client's write-behind threads: the
// pieces of each two blocks shuffled, so a block's last piece often comes
// before its others) and a COMMIT: each block is uploaded once, whole
// (the server held the pieces after a gap until it was filled: before, a
// block whose last piece came first was uploaded unfinished, then again),
// and the file reads back as written. A GETATTR before the COMMIT counts
// the pieces held in the size, and a READ of them sees them.
func TestOutOfOrderWritesUploadEachBlockOnce(t *testing.T) {
	cl := newCluster(t) // 64 KiB blocks
	srv := cl.serve(t, Config{Squash: SquashNone})
	fh := mkFile(t, srv, "f")
	const blocks, piece = 16, 16 << 10
	data := make([]byte, blocks*64<<10)
	rand.Read(data)
	rng := mrand.New(mrand.NewPCG(1, 2))
	var offs []int
	for w := 0; w < len(data); w += 2 * 64 << 10 {
		win := []int{}
		for off := w; off < w+2*64<<10; off += piece {
			win = append(win, off)
		}
		rng.Shuffle(len(win), func(i, j int) { win[i], win[j] = win[j], win[i] })
		offs = append(offs, win...)
	}
	// The last piece of the file comes first: the size must count it.
	last := len(data) - piece
	for i, o := range offs {
		if o == last {
			offs[0], offs[i] = offs[i], offs[0]
		}
	}
	rc := dialRaw(t, srv.addr)
	before := cl.st.Puts()
	first, _ := rc.record(procNFSWrite, writeArgsOf(fh, uint64(offs[0]), data[offs[0]:offs[0]+piece], unstable))
	sendAll(t, rc, [][]byte{first})
	res := rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, fh))
	if s := st(res); s != nfsOK || binary.BigEndian.Uint64(res[4+faSize:]) != uint64(len(data)) {
		t.Errorf("GETATTR with the last piece held: status %d, size %d, want %d", s, binary.BigEndian.Uint64(res[4+faSize:]), len(data))
	}
	var recs [][]byte
	for _, off := range offs[1:] {
		rec, _ := rc.record(procNFSWrite, writeArgsOf(fh, uint64(off), data[off:off+piece], unstable))
		recs = append(recs, rec)
	}
	commit, _ := rc.record(procNFSCommit, readArgsOf(fh, 0, 0))
	sendAll(t, rc, append(recs, commit))
	if got := cl.st.Puts() - before; got != blocks {
		t.Errorf("%d blocks written as %d WRITEs out of order: %d block uploads, want %d", blocks, len(offs), got, blocks)
	}
	if got := readBack(t, rc, fh, len(data)); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not what was written", len(got))
	}

	// A READ of a piece held (after a gap) sees it.
	g := mkFile(t, srv, "g")
	rec, _ := rc.record(procNFSWrite, writeArgsOf(g, 100, []byte("held"), unstable))
	sendAll(t, rc, [][]byte{rec})
	if s, d := readData(t, rc.one(0, 0, procNFSRead, readArgsOf(g, 100, 10))); s != nfsOK || string(d) != "held" {
		t.Errorf("READ of a piece held: status %d, %q", s, d)
	}
}

// TestOutOfOrderWritesPastTheBound: more out-of-order data than a file may
// hold (the second half of every block of a 20 MiB file, then the first
// halves, a rewrite of some bytes held among them): everything held is
// passed on once the bound is reached and the file still reads back as
// written, the rewrite winning.
func TestOutOfOrderWritesPastTheBound(t *testing.T) {
	cl := newCluster(t) // 64 KiB blocks
	srv := cl.serve(t, Config{Squash: SquashNone})
	fh := mkFile(t, srv, "f")
	const bs, size = 64 << 10, 20 << 20
	data := make([]byte, size)
	rand.Read(data)
	rc := dialRaw(t, srv.addr)
	var recs [][]byte
	for half := 1; half >= 0; half-- {
		for off := half * bs / 2; off < size; off += bs {
			rec, _ := rc.record(procNFSWrite, writeArgsOf(fh, uint64(off), data[off:off+bs/2], unstable))
			recs = append(recs, rec)
		}
		if half == 1 {
			// Overwrites part of the first block's held half.
			copy(data[bs/2+100:], "newer")
			rec, _ := rc.record(procNFSWrite, writeArgsOf(fh, bs/2+100, []byte("newer"), unstable))
			recs = append(recs, rec)
		}
	}
	commit, _ := rc.record(procNFSCommit, readArgsOf(fh, 0, 0))
	for i := 0; i < len(recs); i += 64 {
		sendAll(t, rc, recs[i:min(i+64, len(recs))])
	}
	sendAll(t, rc, [][]byte{commit})
	if got := readBack(t, rc, fh, size); !bytes.Equal(got, data) {
		for i := range got {
			if i >= len(data) || got[i] != data[i] {
				t.Fatalf("read back %d bytes, first difference at %d", len(got), i)
			}
		}
		t.Fatalf("read back %d bytes, want %d", len(got), size)
	}
}

// TestHeldWritesComeBeforeASetattr: a piece held for its order (after a
// gap) is passed on before a SETATTR of its file, so the SETATTR's
// change is the later one: a truncate to 0 leaves the file empty after
// the COMMIT (the piece does not come back), a time set stays set.
func TestHeldWritesComeBeforeASetattr(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	rc := dialRaw(t, srv.addr)
	for _, c := range []struct {
		name string
		s    sattr
	}{{"t", sattr{size: u64p(0)}}, {"m", sattr{mode: u32p(0o600)}}} {
		fh := mkFile(t, srv, c.name)
		rec, _ := rc.record(procNFSWrite, writeArgsOf(fh, 100, []byte("held"), unstable))
		sendAll(t, rc, [][]byte{rec})
		set, _ := rc.record(procNFSSetAttr, setattrArgs(fh, c.s, nil))
		commit, _ := rc.record(procNFSCommit, readArgsOf(fh, 0, 0))
		sendAll(t, rc, [][]byte{set, commit})
		res := rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, fh))
		size := binary.BigEndian.Uint64(res[4+faSize:])
		mode := fa32(res[4:], faMode) & 0o7777
		switch {
		case c.s.size != nil && size != 0:
			t.Errorf("truncate to 0 after a piece held at 100: size %d after the COMMIT", size)
		case c.s.mode != nil && (size != 104 || mode != 0o600):
			t.Errorf("chmod after a piece held at 100: size %d mode %o after the COMMIT, want 104 and 600", size, mode)
		}
	}
}

// TestPipelinedSmallWritesReadBack: WRITEs of 4-64 KiB (records from the
// pool of small records, given back as each call is answered) to many
// files, sent at once on one connection, then COMMITs: every file reads
// back as written (no record reused while its call still used it).
func TestPipelinedSmallWritesReadBack(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	rc := dialRaw(t, srv.addr)
	rng := mrand.New(mrand.NewPCG(3, 4))
	const files = 40
	fhs := make([][]byte, files)
	datas := make([][]byte, files)
	var recs [][]byte
	for i := range files {
		fhs[i] = mkFile(t, srv, fmt.Sprintf("s%d", i))
		datas[i] = make([]byte, minPooled+1+rng.IntN(pooledRecord-minPooled-200))
		rand.Read(datas[i])
		rec, _ := rc.record(procNFSWrite, writeArgsOf(fhs[i], 0, datas[i], unstable))
		recs = append(recs, rec)
	}
	sendAll(t, rc, recs)
	recs = recs[:0]
	for i := range files {
		rec, _ := rc.record(procNFSCommit, commitArgsOf(fhs[i]))
		recs = append(recs, rec)
	}
	sendAll(t, rc, recs)
	for i := range files {
		if got := readBack(t, rc, fhs[i], len(datas[i])); !bytes.Equal(got, datas[i]) {
			t.Errorf("file %d: read back %d bytes, not the %d written", i, len(got), len(datas[i]))
		}
	}
}
