package gateway

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"

	"tessera/internal/meta"
)

// Member is one gateway of a Group: a local Ingester, or a gateway process
// reached over the network (package gateway/gwrpc).
type Member interface {
	ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error)
	Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error)
	// FetchData stores [off, off+n) of ino and records nothing: one
	// range of a split fetch.
	FetchData(ctx context.Context, ino meta.Ino, off, n int64) error
	Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error)
}

var _ Member = (*Ingester)(nil)

// NewGroupOf returns the group of members ms named names (what ownership
// hashes over; one per member). self >= 0 makes ms[self], which must be an
// *Ingester, do the work of every request: a gateway process asked by a
// mount is the owner as the mount saw it, and splits a large fetch among
// ms starting with itself. self < 0: each request goes to its owner.
func NewGroupOf(names []string, ms []Member, self int) *Group {
	if len(names) != len(ms) {
		panic("gateway.NewGroupOf: a name per member")
	}
	if self >= 0 {
		if _, ok := ms[self].(*Ingester); !ok {
			panic("gateway.NewGroupOf: self is not an Ingester")
		}
	}
	return newGroup(names, ms, self)
}

// Owner returns the index of the gateway owning ino: the first of
// Rendezvous(ino, names), or self when set.
func (g *Group) Owner(ino meta.Ino) int {
	if g.self >= 0 {
		return g.self
	}
	return Rendezvous(ino, g.names)[0]
}

// Rendezvous orders names by their highest-random-weight hash with ino
// and returns their indexes, the owner first. When a name leaves, only
// the inodes it owned move, each to the next name of its own order, so
// a mount that finds the owner dead asks the one every other mount will.
func Rendezvous(ino meta.Ino, names []string) []int {
	w := make([]uint64, len(names))
	idx := make([]int, len(names))
	for i, n := range names {
		h := fnv.New64a()
		h.Write([]byte(n))
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ino))
		h.Write(b[:])
		w[i], idx[i] = mix(h.Sum64()), i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case w[a] > w[b]:
			return -1
		case w[a] < w[b]:
			return 1
		}
		return 0
	})
	return idx
}

// mix is a 64-bit finalizer: FNV's low bits alone spread inodes unevenly.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// Names returns the members' names, in order (what ownership hashes over).
func (g *Group) Names() []string { return slices.Clone(g.names) }

// Members returns the members, in order.
func (g *Group) Members() []Member { return slices.Clone(g.gs) }
