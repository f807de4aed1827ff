package gateway

import "tessera/internal/meta"

// How a fetch is shared among the gateways of a group. Two rules, so that
// a large fetch keeps every live gateway reading home:
//
//   - shares: blocks to fetch are cut into at least as many pieces as
//     there are gateways whenever they hold that many blocks (and into
//     pieces of at most RangeSize in any case), of near-equal sizes. A
//     16 MiB window of four 4 MiB blocks over three gateways is 2+1+1
//     blocks, not 2+2 (which leaves one gateway idle).
//   - dealing: each piece goes to the gateway with the fewest pieces in
//     flight, ties broken by a turn that advances with every piece (so
//     idle gateways are used in rotation). A turn alone (the first
//     design) hands pieces by count, not by load, and a gateway that is
//     still busy gets the next piece while another idles.

// shares cuts runs into pieces of near-equal block counts, in order:
// max(ceil(total/pieceBlocks), min(gateways, total)) of them (a share
// lying across two runs is two pieces).
func (g *Group) shares(runs []meta.BlockRange, bs int64) []meta.BlockRange {
	var total uint64
	for _, r := range runs {
		total += r.End - r.First
	}
	pb := g.pieceBlocks(bs)
	k := max((total+pb-1)/pb, min(uint64(len(g.gs)), total))
	return cut(runs, k)
}

// cut splits runs into k shares of near-equal block counts (the first
// total%k one block larger), in order.
func cut(runs []meta.BlockRange, k uint64) []meta.BlockRange {
	var total uint64
	for _, r := range runs {
		total += r.End - r.First
	}
	if total == 0 || k <= 1 {
		return runs
	}
	k = min(k, total)
	size := func(i uint64) uint64 {
		if i < total%k {
			return total/k + 1
		}
		return total / k
	}
	out := make([]meta.BlockRange, 0, k+uint64(len(runs)))
	i, left := uint64(0), size(0)
	for _, r := range runs {
		for b := r.First; b < r.End; {
			n := min(left, r.End-b)
			out = append(out, meta.BlockRange{First: b, End: b + n})
			b += n
			left -= n
			if left == 0 && i+1 < k {
				i++
				left = size(i)
			}
		}
	}
	return out
}

// pick chooses the gateway for the next piece of a file owned by o: the
// one with the fewest pieces in flight, ties broken in turn from o. The
// caller ends the piece with done.
func (g *Group) pick(o int) int {
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	n := len(g.gs)
	t := int(g.st.turn % uint64(n))
	g.st.turn++
	best := -1
	for j := range n {
		i := (o + t + j) % n
		if best < 0 || g.st.load[g.names[i]] < g.st.load[g.names[best]] {
			best = i
		}
	}
	g.st.load[g.names[best]]++
	return best
}

// done ends a piece pick gave gateway i.
func (g *Group) done(i int) {
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	name := g.names[i]
	if g.st.load[name]--; g.st.load[name] <= 0 {
		delete(g.st.load, name)
	}
}
