package block

import (
	"encoding/binary"
	"sync"

	"lukechampine.com/blake3/guts"
)

// A block's name is the BLAKE3 hash of its whole content, and BLAKE3 is a
// Merkle tree: 1 KiB chunks are compressed into chaining values, and
// parents join pairs of those up to the root. A Tree keeps the chaining
// values of a block's 16 KiB groups of chunks and of every parent above
// them, so that the name of a version that differs in a few ranges (a
// database commit of a page or two, an append to a log) is found by
// rehashing the groups those ranges touch and the parents on their paths to
// the root, not the whole block: a 4 KiB commit into a 4 MiB block hashes
// 16 KiB and about ten parents instead of 4 MiB. The result is the same
// BLAKE3 hash Sum returns (the tests compare them on random edits); nothing
// about what a name means changes.
//
// The tree's shape: BLAKE3 splits n chunks into a left subtree of the
// largest power of two below n chunks and a right subtree of the rest.
// Pairing the nodes of each level from the left and carrying an odd last
// node up unchanged builds the same tree, because every left subtree is a
// complete power of two; so do 16-chunk groups (a power of two), the last
// of which may hold fewer chunks. Groups are compressed with the SIMD
// kernels of lukechampine.com/blake3/guts (AVX-512: 16 chunks at once).
//
// A Tree is never changed once made; Update returns a new one. It costs
// 64 bytes per 16 KiB of content (16 KiB for a 4 MiB block).

// groupSize is the content one leaf of a Tree covers: guts.MaxSIMD chunks.
const groupSize = guts.MaxSIMD * guts.ChunkSize

// Tree holds the chaining values of a content's BLAKE3 tree above its
// groups (see above).
type Tree struct {
	n int
	// levels[0] has one chaining value per group; levels[i+1] joins the
	// pairs of levels[i], its odd last value carried; the last level has
	// two values (their parent is the root), or one when there is a
	// single group (which is then the root itself, kept as root).
	levels [][][8]uint32
	// root is the single group's node, for content of one group (its
	// root compression needs the node, not its chaining value).
	root guts.Node
	sum  Hash
	// hashed is how many content bytes making the tree compressed.
	hashed int
}

// Len returns the length of the content t is the tree of.
func (t *Tree) Len() int { return t.n }

// Hashed returns how many bytes of content were hashed to make t: its
// length for NewTree, the groups it rehashed for Update.
func (t *Tree) Hashed() int { return t.hashed }

// Sum returns the BLAKE3 hash of t's content: its block name.
func (t *Tree) Sum() Hash { return t.sum }

// Size returns about the bytes t holds.
func (t *Tree) Size() int {
	s := 128
	for _, l := range t.levels {
		s += 24 + 32*len(l)
	}
	return s
}

// NewTree returns the tree of data; its Sum is Sum(data).
func NewTree(data []byte) *Tree {
	t := &Tree{n: len(data), hashed: len(data)}
	ng := numGroups(len(data))
	if ng == 0 {
		t.sum = Sum(nil)
		return t
	}
	if ng == 1 {
		t.root = groupNode(data, 0)
		t.levels = [][][8]uint32{{guts.ChainingValue(t.root)}}
		t.sum = rootHash(t.root)
		return t
	}
	leaves := make([][8]uint32, ng)
	for g := range leaves {
		leaves[g] = guts.ChainingValue(groupNode(data, g))
	}
	t.levels = [][][8]uint32{leaves}
	for l := leaves; len(l) > 2; {
		next := make([][8]uint32, (len(l)+1)/2)
		for j := range next {
			next[j] = join(l, j)
		}
		t.levels = append(t.levels, next)
		l = next
	}
	t.finish()
	return t
}

// Update returns the tree of data, which differs from t's content only
// inside the ranges changed ([lo, hi) offsets, in any order, possibly past
// len(data)) and past the shorter of the two lengths. (A cut below t's
// length that a write then grew back differs from t's content in between:
// the caller names that range.) The caller vouches for the ranges: a
// change outside them gives a wrong hash. t is not changed.
func (t *Tree) Update(data []byte, changed [][2]int64) *Tree {
	ng, og := numGroups(len(data)), numGroups(t.n)
	if ng <= 1 || og <= 1 {
		return NewTree(data)
	}
	// dirty[g]: group g is rehashed. Groups past the shorter of the two
	// lengths' last whole group changed with the length.
	dirty := make(map[int]bool)
	for _, r := range changed {
		lo, hi := max(r[0], 0), min(r[1], int64(len(data)))
		if lo >= hi {
			continue
		}
		for g := lo / groupSize; g <= (hi-1)/groupSize; g++ {
			dirty[int(g)] = true
		}
	}
	if len(data) != t.n {
		for g := min(len(data), t.n) / groupSize; g < ng; g++ {
			dirty[g] = true
		}
	}
	nt := &Tree{n: len(data)}
	leaves := make([][8]uint32, ng)
	copy(leaves, t.levels[0])
	for g := range dirty {
		leaves[g] = guts.ChainingValue(groupNode(data, g))
		nt.hashed += min(groupSize, len(data)-g*groupSize)
	}
	nt.levels = [][][8]uint32{leaves}
	for i, l := 0, leaves; len(l) > 2; i++ {
		next := make([][8]uint32, (len(l)+1)/2)
		var old [][8]uint32
		if i+1 < len(t.levels) {
			old = t.levels[i+1]
		}
		copy(next, old)
		up := make(map[int]bool, len(dirty))
		for g := range dirty {
			up[g/2] = true
		}
		// Every node from the shorter of the old and new levels' last
		// one on may have changed shape (joined or carried).
		for j := max(min(len(old), len(next))-1, 0); j < len(next); j++ {
			up[j] = true
		}
		for j := range up {
			next[j] = join(l, j)
		}
		nt.levels = append(nt.levels, next)
		l, dirty = next, up
	}
	nt.finish()
	return nt
}

// finish computes the root of a tree of two or more groups.
func (t *Tree) finish() {
	top := t.levels[len(t.levels)-1]
	t.sum = rootHash(guts.ParentNode(top[0], top[1], &guts.IV, 0))
}

// join returns node j of the level above l: the parent of l's nodes 2j and
// 2j+1, or node 2j carried up when it is l's odd last one.
func join(l [][8]uint32, j int) [8]uint32 {
	if 2*j+1 >= len(l) {
		return l[2*j]
	}
	return guts.ChainingValue(guts.ParentNode(l[2*j], l[2*j+1], &guts.IV, 0))
}

// rootHash finalizes the root node n into a hash.
func rootHash(n guts.Node) Hash {
	n.Flags |= guts.FlagRoot
	out := guts.CompressNode(n)
	var h Hash
	for i := range 8 {
		binary.LittleEndian.PutUint32(h[4*i:], out[i])
	}
	return h
}

func numGroups(n int) int { return (n + groupSize - 1) / groupSize }

// groupScratch holds a short last group for the SIMD kernels, which read
// whole groups.
var groupScratch = sync.Pool{New: func() any { return new([groupSize]byte) }}

// groupNode returns the (not yet compressed) node of group g of data: the
// root of its chunks' subtree, or its only chunk's last block.
func groupNode(data []byte, g int) guts.Node {
	off := g * groupSize
	n := min(groupSize, len(data)-off)
	counter := uint64(g * guts.MaxSIMD)
	if n == groupSize {
		return guts.CompressBuffer((*[groupSize]byte)(data[off:off+groupSize]), n, &guts.IV, counter, 0)
	}
	buf := groupScratch.Get().(*[groupSize]byte)
	copy(buf[:], data[off:])
	node := guts.CompressBuffer(buf, n, &guts.IV, counter, 0)
	groupScratch.Put(buf)
	return node
}
