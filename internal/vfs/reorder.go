package vfs

import (
	"context"
	"sort"

	"tessera/internal/meta"
)

// Writes of the stateless I/O that come out of offset order (an NFS
// client's write-behind: several WRITEs in flight, sent by several
// threads) are put back in order here, per block, before the client sees
// them. The client starts a block's upload once a write reaches the
// block's end; a piece that ends a block arriving before a piece in the
// middle of it sent the block out unfinished, and the block was uploaded
// again once the rest came (1240 MiB stored for a 1 GiB file).
//
// So an UNSTABLE write is passed on as it comes only where it continues
// what the block holds already (the bytes from the block's start that the
// file had when the tracking began, or that were written since); a piece
// after a gap is held, copied, until the gap is filled, then passed on
// with it in offset order. What is held is passed on, in offset order,
// before anything that must see it: a stable write, a read, a commit, a
// change of attributes, the release of the shared handle. At most
// maxHeld bytes are held per file: past that the pieces held are passed
// on as they are (the blocks they end may be uploaded twice, as before).
// Only under a policy that commits on fsync and close (the default):
// where every write is committed at once, the writes are passed on as
// they come.

// maxHeld bounds the bytes held per file (with a 4 MiB block, a client's
// write-behind of up to 8 MiB out of order).
const maxHeld = 8 << 20

// reorder is the ordering state of one file's unstable writes. Guarded
// by openFile.wmu.
type reorder struct {
	bs   int64
	base int64 // the file's size when the tracking began
	// next is, per block touched, how far from its start the block holds
	// its bytes without a gap (bs: whole, or given up on).
	next map[int64]int64
	held []piece // sorted by offset
	size int64   // bytes held
}

// piece is a write held: its offset in the file and a copy of its data.
type piece struct {
	off  int64
	data []byte
}

// heldEnd returns the end of the last byte held (0: none).
func (r *reorder) heldEnd() int64 {
	var end int64
	for _, p := range r.held {
		end = max(end, p.off+int64(len(p.data)))
	}
	return end
}

// blockNext is how far block idx holds its bytes from its start.
func (r *reorder) blockNext(idx int64) int64 {
	if n, ok := r.next[idx]; ok {
		return n
	}
	return min(max(r.base-idx*r.bs, 0), r.bs)
}

// write passes data at off on to the shared handle, or holds the pieces
// of it that come after a gap in their block.
func (v *FS) writeOrdered(ctx context.Context, of *openFile, off int64, data []byte) (int, error) {
	of.wmu.Lock()
	defer of.wmu.Unlock()
	r := of.ro
	if r.next == nil {
		r.next = make(map[int64]int64)
		r.base = of.h.Size()
	}
	written := 0
	for len(data) > 0 {
		idx := off / r.bs
		bo := off - idx*r.bs
		n := min(int64(len(data)), r.bs-bo)
		seg := data[:n]
		r.cut(off, off+n) // what is held there is older
		next := r.blockNext(idx)
		switch {
		case bo > next && r.size+n <= maxHeld:
			r.hold(off, seg)
		case bo > next:
			// Too much held: everything goes on as it is, and this
			// block's writes as they come.
			if err := v.passHeld(ctx, of); err != nil {
				return written, err
			}
			r.next[idx] = r.bs
			next = r.bs
			fallthrough
		default:
			if _, err := of.h.Write(ctx, off, seg); err != nil {
				return written, err
			}
			r.next[idx] = max(next, bo+n)
			if err := v.passFilled(ctx, of, idx); err != nil {
				return written, err
			}
		}
		off += n
		data = data[n:]
		written += int(n)
	}
	return written, nil
}

// hold keeps a copy of seg, at off, in offset order.
func (r *reorder) hold(off int64, seg []byte) {
	i := sort.Search(len(r.held), func(i int) bool { return r.held[i].off > off })
	r.held = append(r.held, piece{})
	copy(r.held[i+1:], r.held[i:])
	r.held[i] = piece{off: off, data: append([]byte(nil), seg...)}
	r.size += int64(len(seg))
}

// cut drops the bytes in [off, end) from the pieces held: a later write
// replaces them.
func (r *reorder) cut(off, end int64) {
	if len(r.held) == 0 {
		return
	}
	out := r.held[:0:0]
	for _, p := range r.held {
		pend := p.off + int64(len(p.data))
		if pend <= off || p.off >= end {
			out = append(out, p)
			continue
		}
		if p.off < off {
			out = append(out, piece{off: p.off, data: p.data[:off-p.off]})
		}
		if pend > end {
			out = append(out, piece{off: end, data: p.data[end-p.off:]})
		}
		r.size -= min(pend, end) - max(p.off, off)
	}
	r.held = out
}

// passFilled passes on the pieces held in block idx that now continue
// what it holds, in offset order.
func (v *FS) passFilled(ctx context.Context, of *openFile, idx int64) error {
	r := of.ro
	start := idx * r.bs
	for i := 0; i < len(r.held); {
		p := r.held[i]
		if p.off < start || p.off >= start+r.bs {
			i++
			continue
		}
		next := r.next[idx]
		if p.off-start > next {
			return nil // still a gap (held is sorted: so are the rest)
		}
		if _, err := of.h.Write(ctx, p.off, p.data); err != nil {
			return err
		}
		r.next[idx] = max(next, p.off-start+int64(len(p.data)))
		r.size -= int64(len(p.data))
		r.held = append(r.held[:i], r.held[i+1:]...)
	}
	return nil
}

// passHeld passes on everything held, in offset order, and gives up on
// the blocks it was in (their later writes are passed on as they come).
func (v *FS) passHeld(ctx context.Context, of *openFile) error {
	r := of.ro
	for len(r.held) > 0 {
		p := r.held[0]
		if _, err := of.h.Write(ctx, p.off, p.data); err != nil {
			return err
		}
		r.next[p.off/r.bs] = r.bs
		r.size -= int64(len(p.data))
		r.held = r.held[1:]
	}
	r.held = nil
	return nil
}

// settle passes on what of holds and starts the tracking afresh (before a
// read, a stable write, a commit, a change of attributes, a release).
func (v *FS) settle(ctx context.Context, of *openFile) error {
	of.wmu.Lock()
	defer of.wmu.Unlock()
	if of.ro == nil || of.ro.next == nil {
		return nil
	}
	err := v.passHeld(ctx, of)
	of.ro.next, of.ro.held, of.ro.size = nil, nil, 0
	return err
}

// settleIno is settle of ino's shared handle, if it has one.
func (v *FS) settleIno(ctx context.Context, ino meta.Ino) error {
	t := &v.open
	t.mu.Lock()
	of := t.m[ino]
	if of != nil {
		of.users++
		if of.idle != nil {
			of.idle.Stop()
		}
	}
	t.mu.Unlock()
	if of == nil {
		return nil
	}
	defer v.done(of)
	return v.settle(ctx, of)
}

// heldSize is the size of ino counting the writes held (0: none held).
func (v *FS) heldSize(ino meta.Ino) int64 {
	t := &v.open
	t.mu.Lock()
	of := t.m[ino]
	t.mu.Unlock()
	if of == nil || of.ro == nil {
		return 0
	}
	of.wmu.Lock()
	defer of.wmu.Unlock()
	return of.ro.heldEnd()
}

// Overlay sets in's size and mtime as this FS sees them: the client's
// writes not committed yet (client.Client.Overlay) and the writes held
// for their order.
func (v *FS) Overlay(in *meta.Inode) {
	v.c.Overlay(in)
	if !in.IsRegular() {
		return
	}
	if end := v.heldSize(in.Ino); end > int64(in.Size) {
		in.Size = uint64(end)
	}
}
