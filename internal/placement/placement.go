package placement

import (
	"encoding/binary"
	"slices"
	"strings"

	"tessera/internal/block"
)

// Pick returns the ids of the r servers that hold block h, best first: the
// servers with the highest rendezvous weight for h. It returns all servers
// (ranked) if r exceeds their number, and none if r <= 0. Ids are compared as
// given; duplicates count once. For many blocks over the same servers, use
// NewSet once and Set.Pick.
func Pick(h block.Hash, servers []string, r int) []string {
	return NewSet(servers).Pick(h, r)
}

// Set is a set of server ids prepared for placing many blocks.
type Set struct {
	ids  []string
	keys []uint64 // keys[i] = serverKey(ids[i])
}

// NewSet returns the Set of servers, without duplicates.
func NewSet(servers []string) *Set {
	s := &Set{}
	seen := make(map[string]bool, len(servers))
	for _, id := range servers {
		if seen[id] {
			continue
		}
		seen[id] = true
		s.ids = append(s.ids, id)
		s.keys = append(s.keys, serverKey(id))
	}
	return s
}

// Len returns the number of servers in the set.
func (s *Set) Len() int { return len(s.ids) }

// ID returns the id of server i, for the indexes PickIndex returns.
func (s *Set) ID(i int) string { return s.ids[i] }

// Pick is Pick over the set.
func (s *Set) Pick(h block.Hash, r int) []string {
	idx := s.PickIndex(h, r, nil)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = s.ids[j]
	}
	return out
}

// PickIndex is Pick returning indexes into the set (see ID), appended to
// dst[:0]; it allocates nothing when dst has room for r.
func (s *Set) PickIndex(h block.Hash, r int, dst []int) []int {
	dst = dst[:0]
	r = min(r, len(s.ids))
	if r <= 0 {
		return dst
	}
	bk := blockKey(h)
	if r == 1 {
		best, bestScore := 0, score(bk, s.keys[0])
		for i := 1; i < len(s.keys); i++ {
			if sc := score(bk, s.keys[i]); sc > bestScore || sc == bestScore && s.ids[i] < s.ids[best] {
				best, bestScore = i, sc
			}
		}
		return append(dst, best)
	}
	if r > smallR {
		return append(dst, s.rank(bk)[:r]...)
	}
	// Keep the r best so far, best first.
	var scoresBuf [smallR]uint64
	scores := scoresBuf[:0]
	for i, k := range s.keys {
		sc := score(bk, k)
		if len(dst) == r && (sc < scores[r-1] || !s.better(sc, i, scores[r-1], dst[r-1])) {
			continue
		}
		pos := len(dst)
		for pos > 0 && s.better(sc, i, scores[pos-1], dst[pos-1]) {
			pos--
		}
		if len(dst) < r {
			dst = append(dst, 0)
			scores = append(scores, 0)
		}
		copy(dst[pos+1:], dst[pos:len(dst)-1])
		copy(scores[pos+1:], scores[pos:len(scores)-1])
		dst[pos], scores[pos] = i, sc
	}
	return dst
}

// better orders servers: higher score first, then the smaller id (a tie of
// 64-bit scores is all but impossible, but the order must not depend on the
// order of the servers).
func (s *Set) better(sc uint64, i int, sc2 uint64, j int) bool {
	if sc != sc2 {
		return sc > sc2
	}
	return strings.Compare(s.ids[i], s.ids[j]) < 0
}

// smallR is the largest r for which PickIndex keeps a running top r (O(n*r))
// rather than sorting all servers (O(n log n)).
const smallR = 8

// Ranked returns all servers ranked for h, best first.
func (s *Set) Ranked(h block.Hash) []string {
	idx := s.rank(blockKey(h))
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = s.ids[j]
	}
	return out
}

// rank returns the indexes of all servers, best first.
func (s *Set) rank(bk uint64) []int {
	type ranked struct {
		score uint64
		i     int
	}
	all := make([]ranked, len(s.keys))
	for i, k := range s.keys {
		all[i] = ranked{score(bk, k), i}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		switch {
		case a.i == b.i:
			return 0
		case s.better(a.score, a.i, b.score, b.i):
			return -1
		default:
			return 1
		}
	})
	idx := make([]int, len(all))
	for i, x := range all {
		idx[i] = x.i
	}
	return idx
}

// blockKey takes 64 bits of the block hash, which is already uniform.
func blockKey(h block.Hash) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// serverKey hashes a server id: FNV-1a, then mixed.
func serverKey(id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	x := uint64(offset)
	for i := 0; i < len(id); i++ {
		x ^= uint64(id[i])
		x *= prime
	}
	return mix(x)
}

// score is the rendezvous weight of a server for a block.
func score(blockKey, serverKey uint64) uint64 { return mix(blockKey ^ serverKey) }

// mix is a bijective 64-bit finaliser with full avalanche (Pelle Evensen's
// rrmxmx), so that keys differing in a fixed pattern of bits (as blockKey ^
// serverKey does across servers) score independently.
func mix(x uint64) uint64 {
	x ^= (x>>49 | x<<15) ^ (x>>24 | x<<40)
	x *= 0x9fb21c651e98df25
	x ^= x >> 28
	x *= 0x9fb21c651e98df25
	return x ^ x>>28
}

// Domain names the failure domains a server lives in.
type Domain struct {
	Site, Rack, Host string
}

// Spread picks r of the ranked ids (best first, as Ranked returns them) so
// that the copies land in as many different failure domains as the servers
// allow: each next pick is the best-ranked server that opens a new site, else
// a new rack, else a new host, else any. With one server per host and no
// racks or sites this is the first r of ranked.
func Spread(ranked []string, domain func(id string) Domain, r int) []string {
	out := make([]string, 0, min(r, len(ranked)))
	used := make([]bool, len(ranked))
	sites, racks, hosts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for len(out) < r && len(out) < len(ranked) {
		best, bestScore := -1, -1
		for i, id := range ranked {
			if used[i] {
				continue
			}
			d := domain(id)
			score := 0
			switch {
			case !sites[d.Site]:
				score = 3
			case !racks[d.Site+"/"+d.Rack]:
				score = 2
			case !hosts[d.Site+"/"+d.Rack+"/"+d.Host]:
				score = 1
			}
			if score > bestScore {
				best, bestScore = i, score
			}
			if score == 3 {
				break
			}
		}
		used[best] = true
		d := domain(ranked[best])
		sites[d.Site] = true
		racks[d.Site+"/"+d.Rack] = true
		hosts[d.Site+"/"+d.Rack+"/"+d.Host] = true
		out = append(out, ranked[best])
	}
	return out
}
