package client

import (
	"unsafe"
	"weak"

	"tessera/internal/block"
)

// Appends write into the buffer of the version before them.
//
// A policy that commits every write (posix) makes each write a version of
// its block: the write's buffer goes to the upload and, composed, to the
// memory cache, neither of which may see it change, so the next write into
// the block started from a private copy of the whole block. A writer
// appending 128 KiB at a time (what FUSE hands over of fio's 1 MiB writes)
// copied the block 32 times per block: 9.7 GB of copies (and 5.4 GB of
// regrowth) for 2 GB written by fio's four writers under tessera up
// --policy posix, the garbage that set the daemon's peak.
//
// Bytes [0, len) of a version's buffer never change once it is scheduled;
// an append needs none of them changed, only the room past the end. So the
// new dirty block of an append takes the version's buffer itself as long
// as it has room (its capacity; a block's buffer is allocated with room to
// grow), and notes that its first `shared` bytes belong to the version: a
// write into them, a truncate below them, or a growth past the capacity
// copies first (dblock.unshareLocked). The room is taken once: the file
// records, for each block, the version it scheduled last with room past
// its end (tail, by a weak pointer, so an evicted version's memory goes);
// a dirty block takes the room only from that version's buffer, found
// again by identity, and takes the record with it. A buffer another file
// reads from the cache (the same content) is never its tail, and a version
// whose room was taken is not reused as a write buffer.

// tail is the version of a block a file scheduled last whose buffer has
// room past its end.
type tail struct {
	p    weak.Pointer[byte] // the buffer's array
	n, c int                // its length and capacity
	seq  uint64             // the version's dblock.seq
	h    block.Hash         // the version's hash, once uploaded
}

// noteTailLocked records d's buffer, just scheduled, as block d.idx's tail
// when it has room past its end that no older version's bytes occupy.
func (f *file) noteTailLocked(d *dblock) {
	d.tail = false
	if len(d.buf) == 0 || cap(d.buf) == len(d.buf) || int64(len(d.buf)) < d.shared {
		delete(f.tails, d.idx)
		return
	}
	if f.tails == nil {
		f.tails = make(map[uint64]tail)
	}
	f.tails[d.idx] = tail{p: weak.Make(unsafe.SliceData(d.buf)), n: len(d.buf), c: cap(d.buf), seq: d.seq}
	d.tail = true
}

// claimTailLocked reports whether buf, the content of block idx a new dirty
// block starts from, is that block's tail, and if so takes the room past
// its end for the new dirty block.
func (f *file) claimTailLocked(idx uint64, buf []byte) bool {
	t, ok := f.tails[idx]
	if !ok || len(buf) == 0 || len(buf) != t.n || cap(buf) == len(buf) || t.p.Value() != unsafe.SliceData(buf) {
		return false
	}
	delete(f.tails, idx)
	return true
}

// privateLocked returns what a new dirty block of block idx starts from,
// given the block's content buf cut at lim bytes: buf itself when the first
// write, [at, end), is an append (at >= its length; -1: not a write) and buf
// is the block's tail, with the length of the bytes it shares with the
// version; else a private copy with room up to end (cloneRoom) and 0.
func (f *file) privateLocked(idx uint64, buf []byte, lim, at, end int64) ([]byte, int64) {
	n := int64(len(buf))
	if n <= lim && at >= n && f.claimTailLocked(idx, buf) {
		return buf, n
	}
	return cloneRoom(buf, lim, f.bs, end), 0
}

// unshareLocked gives d a private copy of its buffer before a write at off
// when that would change bytes a version owns: off inside the shared
// prefix, or a buffer cut (truncated) below it, whose gap-filling would.
func (d *dblock) unshareLocked(off, bs int64) {
	if d.shared == 0 || (off >= d.shared && int64(len(d.buf)) >= d.shared) {
		return
	}
	d.buf = cloneBlock(d.buf, int64(len(d.buf)), bs)
	d.shared = 0
}

// uploadedTailLocked notes that the version d, uploaded as h, is block
// d.idx's tail if it still is: the next write finds its content there.
func (f *file) uploadedTailLocked(d *dblock, h block.Hash) {
	if t, ok := f.tails[d.idx]; ok && t.seq == d.seq {
		t.h = h
		f.tails[d.idx] = t
	}
}

// tailContentLocked returns the content of version h of block idx from
// the buffer it was uploaded from, when that is the block's tail and still
// in memory (nil otherwise): the next append goes on it without a fetch
// (a version uploaded whole is not in the memory cache).
func (f *file) tailContentLocked(idx uint64, h block.Hash) []byte {
	t, ok := f.tails[idx]
	if !ok || h.IsZero() || t.h != h {
		return nil
	}
	p := t.p.Value()
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, t.c)[:t.n]
}

// reusableLocked reports whether d's buffer, uploaded whole, may be reused
// as a write buffer: it is no tail (an append may write on past its end,
// or the next write find its content there) and shares no bytes with an
// older version.
func (f *file) reusableLocked(d *dblock) bool {
	return !d.tail && d.shared == 0
}

// failedTailLocked prepares d, whose upload failed, to be written again:
// its room may have been taken by a newer dirty block, so it gets a
// private buffer, and it is no tail until it is scheduled again.
func (f *file) failedTailLocked(d *dblock) {
	if d.tail {
		if t, ok := f.tails[d.idx]; ok && t.seq == d.seq {
			delete(f.tails, d.idx)
		}
		d.buf = cloneBlock(d.buf, int64(len(d.buf)), f.bs)
		d.shared, d.tail = 0, false
	}
}
