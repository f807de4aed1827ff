package placement

import "tessera/internal/block"

// A writer may place a block with r copies on any r of its r+1 candidates
// (the "power of two choices"): it leaves out the candidate it has loaded
// most. Readers and the mover know the candidates from the map alone, so
// there is still no table of block locations; a reader that meets a missing
// copy falls back along the candidates, at the cost of one miss.

// Candidates returns the servers a block with r copies may live on, best
// first: Spread(ranked, domain, r+1). Its first r are the plain rendezvous
// placement (Spread is greedy, so Spread(.., r) is a prefix of it). When
// there are at most r servers, it returns all of them and there is no choice.
func Candidates(ranked []string, domain func(id string) Domain, r int) []string {
	if r <= 0 {
		return nil
	}
	return Spread(ranked, domain, r+1)
}

// Options returns the placements a block with r copies may have over cands
// (as Candidates returns them): every r of them whose spread over failure
// domains (distinct sites, then racks, then hosts) is as wide as that of
// cands[:r]. The plain placement cands[:r] comes first, then the others in
// the order of the candidate they leave out, from the last to the first. With
// at most r candidates the only option is cands itself.
func Options(cands []string, domain func(id string) Domain, r int) [][]string {
	if r <= 0 {
		return nil
	}
	if len(cands) <= r {
		return [][]string{cands}
	}
	cands = cands[:r+1]
	want := widthOf(cands[:r], domain)
	var out [][]string
	for skip := r; skip >= 0; skip-- {
		opt := make([]string, 0, r)
		opt = append(opt, cands[:skip]...)
		opt = append(opt, cands[skip+1:]...)
		if skip == r || !widthOf(opt, domain).less(want) {
			out = append(out, opt)
		}
	}
	return out
}

// Choose returns the option (see Options) that leaves out the candidate with
// the highest cost, cost(id) being the chooser's measure of how loaded the
// server is (for a client: its requests queued or in flight to it). Options
// tied on cost are told apart by tie (for a writer: the block hash's key), so
// that with equal costs each option is equally likely over many blocks and
// the copies still spread like rendezvous hashing (adding a server then moves
// about 1/N of them, see package mover).
func Choose(cands []string, domain func(id string) Domain, r int, cost func(id string) int64, tie uint64) []string {
	opts := Options(cands, domain, r)
	if len(opts) <= 1 {
		if len(opts) == 0 {
			return nil
		}
		return opts[0]
	}
	var best []int
	bestCost := int64(-1)
	for i, opt := range opts {
		switch c := cost(LeftOut(cands, opt)); {
		case c > bestCost:
			best, bestCost = append(best[:0], i), c
		case c == bestCost:
			best = append(best, i)
		}
	}
	return opts[best[tie%uint64(len(best))]]
}

// TieKey returns a tie-breaking key for Choose from a block hash.
func TieKey(h block.Hash) uint64 { return mix(blockKey(h) ^ 0x5bd1e995) }

// LeftOut returns the candidate of cands[:len(opt)+1] that option opt
// lacks, "" when opt is all of cands.
func LeftOut(cands, opt []string) string {
	for i, id := range opt {
		if cands[i] != id {
			return cands[i]
		}
	}
	if len(cands) > len(opt) {
		return cands[len(opt)]
	}
	return ""
}

// width counts the distinct failure domains of a set of servers.
type width struct{ sites, racks, hosts int }

// less orders widths: sites first, then racks, then hosts.
func (w width) less(o width) bool {
	if w.sites != o.sites {
		return w.sites < o.sites
	}
	if w.racks != o.racks {
		return w.racks < o.racks
	}
	return w.hosts < o.hosts
}

func widthOf(ids []string, domain func(id string) Domain) width {
	sites, racks, hosts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, id := range ids {
		d := domain(id)
		sites[d.Site] = true
		racks[d.Site+"/"+d.Rack] = true
		hosts[d.Site+"/"+d.Rack+"/"+d.Host] = true
	}
	return width{len(sites), len(racks), len(hosts)}
}
