package meta

import (
	"context"
	"encoding/binary"
	"fmt"

	"tessera/internal/block"
)

// Composed blocks.
//
// A small write into a large block changes a few KiB of it; storing the
// changed block whole would send and store the block size per write (a
// 64 KiB write into a 4 MiB block: 64x). Instead the writer uploads just
// the bytes it wrote, as small content-addressed patch blocks, and commits
// the new block's hash (the hash of its whole content, as always) with a
// Composition: the base block it changed plus the patches. The service
// keeps the composition under the new hash ("k" hash); recipes, commits,
// conflicts and callbacks still speak of whole-content hashes, so nothing
// else changes: a reader that meets a composed hash fetches the base and
// the patches, assembles the block and checks its hash like any other.
//
// Compositions are flattened when made: a change to a composed block
// composes over that block's base, with its patches then the new ones, so
// reading one takes at most 1 + MaxPatches fetches. Past MaxPatches (or
// once the patches would outweigh the block) the writer uploads the whole
// block again: that is the compaction. A composition is content-addressed
// like a block: immutable, shared by every recipe naming its hash.
//
// Record (key "k" hash): 1 | len 4 | base 32 | n 1 (1..MaxPatches) |
// n * (hash 32 | off 4 | len 4).

// composeKey is the key of hash h's composition.
func composeKey(h block.Hash) []byte {
	k := make([]byte, 1+block.HashSize)
	k[0] = pfxCompose
	copy(k[1:], h[:])
	return k
}

func encodeComposition(c Composition) []byte {
	b := make([]byte, 0, 1+4+block.HashSize+1+len(c.Patches)*(block.HashSize+8))
	b = append(b, recordV1)
	b = binary.BigEndian.AppendUint32(b, c.Len)
	b = append(b, c.Base[:]...)
	b = append(b, byte(len(c.Patches)))
	for _, p := range c.Patches {
		b = append(b, p.Hash[:]...)
		b = binary.BigEndian.AppendUint32(b, p.Off)
		b = binary.BigEndian.AppendUint32(b, p.Len)
	}
	return b
}

func decodeComposition(b []byte) (Composition, error) {
	r := reader{b: b, what: "composition"}
	r.version()
	var c Composition
	c.Len = r.u32()
	if v := r.fixed(block.HashSize); v != nil {
		copy(c.Base[:], v)
	}
	var n uint64
	if v := r.fixed(1); v != nil {
		n = uint64(v[0])
	}
	if r.err == nil && (n == 0 || n > MaxPatches) {
		r.fail("%d patches", n)
	}
	for i := uint64(0); r.err == nil && i < n; i++ {
		var p Patch
		if v := r.fixed(block.HashSize); v != nil {
			copy(p.Hash[:], v)
		}
		p.Off, p.Len = r.u32(), r.u32()
		c.Patches = append(c.Patches, p)
	}
	if err := r.end(); err != nil {
		return Composition{}, err
	}
	if err := c.check(0); err != nil {
		return Composition{}, corruptf("composition record: %v", err)
	}
	return c, nil
}

// check validates c as a composition of a block of a file whose blocks are
// bs bytes (0: any size).
func (c Composition) check(bs uint32) error {
	if bs != 0 && c.Len > bs {
		return fmt.Errorf("composed block of %d bytes in a file of %d-byte blocks: %w", c.Len, bs, ErrInvalid)
	}
	if len(c.Patches) == 0 || len(c.Patches) > MaxPatches {
		return fmt.Errorf("composition of %d patches, want 1 to %d: %w", len(c.Patches), MaxPatches, ErrInvalid)
	}
	for _, p := range c.Patches {
		if p.Len == 0 || uint64(p.Off)+uint64(p.Len) > uint64(c.Len) {
			return fmt.Errorf("patch [%d,+%d) outside a block of %d bytes: %w", p.Off, p.Len, c.Len, ErrInvalid)
		}
	}
	return nil
}

// getComposition returns h's composition, if h is composed.
func (t txn) getComposition(h block.Hash) (Composition, bool, error) {
	if h.IsZero() {
		return Composition{}, false, nil
	}
	v, ok, err := t.Get(composeKey(h))
	if err != nil || !ok {
		return Composition{}, false, err
	}
	c, err := decodeComposition(v)
	return c, err == nil, err
}

// compose records that block h of a file of bs-byte blocks is c, flattened
// over c.Base's own composition, counting in refs a reference from h to
// each of its pieces. An existing composition of h stays (the same
// content, however made).
func (t txn) compose(h block.Hash, c Composition, bs uint32, refs refDeltas) error {
	if h.IsZero() || h == c.Base {
		return fmt.Errorf("composition of a hole or over itself: %w", ErrInvalid)
	}
	if err := c.check(bs); err != nil {
		return err
	}
	if _, ok, err := t.getComposition(h); err != nil || ok {
		return err
	}
	if base, ok, err := t.getComposition(c.Base); err != nil {
		return err
	} else if ok {
		flat := Composition{Len: c.Len, Base: base.Base}
		for _, p := range base.Patches {
			if p.Off < c.Len {
				p.Len = min(p.Len, c.Len-p.Off)
				flat.Patches = append(flat.Patches, p)
			}
		}
		flat.Patches = append(flat.Patches, c.Patches...)
		if len(flat.Patches) > MaxPatches {
			return fmt.Errorf("composition over a block of %d patches: %d past %d: %w", len(base.Patches), len(flat.Patches), MaxPatches, ErrInvalid)
		}
		c = flat
	}
	for _, p := range c.Pieces() {
		refs.add(p, 1)
	}
	return t.Put(composeKey(h), encodeComposition(c))
}

// dropComposition deletes h's composition, if any, counting in refs the
// references it held on its pieces.
func (t txn) dropComposition(h block.Hash, refs refDeltas) error {
	c, ok, err := t.getComposition(h)
	if err != nil || !ok {
		return err
	}
	for _, p := range c.Pieces() {
		refs.add(p, -1)
	}
	return t.Delete(composeKey(h))
}

// compositionsOf adds to out the compositions of the composed hashes in hs.
func (t txn) compositionsOf(hs []block.Hash, out map[block.Hash]Composition) (map[block.Hash]Composition, error) {
	for _, h := range hs {
		if h.IsZero() {
			continue
		}
		if _, ok := out[h]; ok {
			continue
		}
		c, ok, err := t.getComposition(h)
		if err != nil {
			return out, err
		}
		if ok {
			if out == nil {
				out = make(map[block.Hash]Composition)
			}
			out[h] = c
		}
	}
	return out, nil
}

// Pieces returns the blocks a block with composition c is made of: the
// base, unless a hole, and the patches that are not zeros.
func (c Composition) Pieces() []block.Hash {
	out := make([]block.Hash, 0, 1+len(c.Patches))
	if !c.Base.IsZero() {
		out = append(out, c.Base)
	}
	for _, p := range c.Patches {
		if !p.Hash.IsZero() {
			out = append(out, p.Hash)
		}
	}
	return out
}

// Decompose implements API.
func (s *Service) Decompose(ctx context.Context, h block.Hash) error {
	err := s.update(ctx, func(t txn) error {
		refs := refDeltas{}
		if err := t.dropComposition(h, refs); err != nil {
			return err
		}
		return t.applyRefs(refs, s.nowNs())
	})
	if err != nil {
		return fmt.Errorf("decompose block %s: %w", h.Short(), err)
	}
	return nil
}
