package mover

import (
	"slices"
	"strings"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Holdings is what each listed server holds: server id -> block -> size.
// Servers that are down or could not be listed are absent.
type Holdings map[string]map[block.Hash]int64

// Task is the work for one block.
type Task struct {
	Hash      block.Hash
	Size      int64
	R         int            // copies in all
	Spec      placement.Spec // where they go (a number: anywhere)
	Placement []string       // the servers the block belongs on (see Plan)
	Holders   []string       // listed servers holding it, in ID order
	Copy      []string       // placement members that lack it
	Remove    []string       // holders outside the placement
}

// Stats summarise a plan, as MoverProgress reports them.
type Stats struct {
	Blocks          int64 // live blocks
	UnderReplicated int64 // fewer live copies (on up or draining servers) than R
	Misplaced       int64 // a copy outside the placement (or an extra one within its candidates)
	Lost            int64 // no listed server holds it
	BytesToMove     int64 // sum of the copies' sizes
	// LostHashes are the first meta.MaxLostReported lost blocks, in hash
	// order.
	LostHashes []block.Hash
	// UnderBySite counts, per site named by a block's site spec, the
	// blocks with fewer copies there than the spec asks for;
	// UnderBytesBySite sums their sizes, and ShortBySite names them (the
	// mover keeps when it first saw each one short: the site's lag).
	UnderBySite      map[string]int64
	UnderBytesBySite map[string]int64
	ShortBySite      map[string][]block.Hash
}

// Plan computes the tasks that bring every live block (hash -> R) to its
// placement over the up servers of m, given what the servers hold. Blocks
// that need nothing get no task; the tasks are in hash order.
//
// Writers put a block on any R of its R+1 candidates that spread as widely
// over failure domains (placement.Options), so a block's placement is the
// option that the copies it has already cover best; among those, the one
// leaving out the candidate that holds the most bytes (so a new server is
// filled), then the earliest. Copies
// outside that option are removed once it is complete: copies outside the
// candidates, and extra copies within them (two writers of the same block
// that chose differently).
func Plan(m meta.ServerMap, held Holdings, live map[block.Hash]int) ([]Task, Stats) {
	specs := make(map[block.Hash]placement.Spec, len(live))
	for h, r := range live {
		specs[h] = placement.Copies(r)
	}
	return PlanSpecs(m, held, specs)
}

// PlanSpecs is Plan for blocks with replication specs: a number of copies
// is placed as Plan places it; a per-site spec is placed group by group,
// each site's copies on an option over the site's own candidates
// (rendezvous within the site, placement.InGroup), which is where writers
// put them. A block is under-replicated when it has fewer copies than the
// spec asks for in all, or fewer in one of its sites (counted per site in
// Stats.UnderBySite).
func PlanSpecs(m meta.ServerMap, held Holdings, live map[block.Hash]placement.Spec) ([]Task, Stats) {
	var ups []string
	state := make(map[string]string, len(m.Servers))
	dom := make(map[string]placement.Domain, len(m.Servers))
	for _, s := range m.Servers {
		state[s.ID] = s.State
		host := s.Host
		if host == "" { // a host of its own, as the client sees it
			host = s.ID
		}
		dom[s.ID] = placement.Domain{Site: s.Site, Rack: s.Rack, Host: host}
		if s.State == meta.StateUp {
			ups = append(ups, s.ID)
		}
	}
	domainOf := func(id string) placement.Domain { return dom[id] }
	listed := make([]string, 0, len(held))
	for id := range held {
		if st, ok := state[id]; ok && st != meta.StateDown {
			listed = append(listed, id)
		}
	}
	slices.Sort(listed)
	set := placement.NewSet(ups)
	usage := make(map[string]int64, len(held))
	for id, hs := range held {
		for _, size := range hs {
			usage[id] += size
		}
	}
	hashes := make([]block.Hash, 0, len(live))
	for h := range live {
		hashes = append(hashes, h)
	}
	slices.SortFunc(hashes, func(a, b block.Hash) int { return slices.Compare(a[:], b[:]) })

	var tasks []Task
	var st Stats
	for _, h := range hashes {
		spec := live[h]
		r := spec.N
		st.Blocks++
		t := Task{Hash: h, R: r, Spec: spec}
		for _, id := range listed {
			if size, ok := held[id][h]; ok {
				t.Holders = append(t.Holders, id)
				t.Size = size
			}
		}
		ranked := set.Pick(h, set.Len())
		under := len(t.Holders) < r
		for _, g := range spec.Groups() {
			cands := placement.Candidates(placement.InGroup(ranked, domainOf, g), domainOf, g.K)
			t.Placement = append(t.Placement, bestOption(cands, placement.Options(cands, domainOf, g.K), t.Holders, usage)...)
			if g.Any {
				continue
			}
			n := 0
			for _, id := range t.Holders {
				if dom[id].Site == g.Site {
					n++
				}
			}
			if n < g.K {
				under = true
				if st.UnderBySite == nil {
					st.UnderBySite = map[string]int64{}
					st.UnderBytesBySite = map[string]int64{}
					st.ShortBySite = map[string][]block.Hash{}
				}
				st.UnderBySite[g.Site]++
				st.UnderBytesBySite[g.Site] += t.Size
				st.ShortBySite[g.Site] = append(st.ShortBySite[g.Site], h)
			}
		}
		for _, id := range t.Holders {
			if !slices.Contains(t.Placement, id) {
				t.Remove = append(t.Remove, id)
			}
		}
		if under {
			st.UnderReplicated++
		}
		if len(t.Remove) > 0 {
			st.Misplaced++
		}
		if len(t.Holders) == 0 {
			st.Lost++
			if len(st.LostHashes) < meta.MaxLostReported {
				st.LostHashes = append(st.LostHashes, h)
			}
			continue // nothing to copy from; nothing to remove
		}
		for _, id := range t.Placement {
			if !slices.Contains(t.Holders, id) {
				t.Copy = append(t.Copy, id)
			}
		}
		st.BytesToMove += int64(len(t.Copy)) * t.Size
		if len(t.Copy)+len(t.Remove) > 0 {
			tasks = append(tasks, t)
		}
	}
	return tasks, st
}

// bestOption returns the option over cands holding most of the holders'
// copies; on a tie, the one leaving out the candidate with the most bytes
// (usage), then the earliest.
func bestOption(cands []string, opts [][]string, holders []string, usage map[string]int64) []string {
	var best []string
	bestN, bestUse := -1, int64(-1)
	for _, opt := range opts {
		n := 0
		for _, id := range opt {
			if slices.Contains(holders, id) {
				n++
			}
		}
		use := usage[placement.LeftOut(cands, opt)]
		if n > bestN || n == bestN && use > bestUse {
			best, bestN, bestUse = opt, n, use
		}
	}
	return best
}

// Removable reports whether the copy on server id may be removed when the
// servers in have hold the block: only once every placement member holds it
// and at least R copies remain on up servers other than id.
func (t *Task) Removable(id string, have map[string]bool, up func(id string) bool) bool {
	for _, p := range t.Placement {
		if !have[p] {
			return false
		}
	}
	n := 0
	for s, ok := range have {
		if ok && s != id && up(s) {
			n++
		}
	}
	return n >= t.R
}

// under reports whether the servers in have hold fewer copies of t's block
// than its spec asks for, in all or in one of its sites.
func (t *Task) under(have map[string]bool, site func(id string) string) bool {
	n := 0
	for _, ok := range have {
		if ok {
			n++
		}
	}
	return n < t.R || len(t.shortSites(have, site)) > 0
}

// shortSites returns the sites of t's spec where have holds fewer copies
// than it asks for there.
func (t *Task) shortSites(have map[string]bool, site func(id string) string) []string {
	var out []string
	for _, c := range t.Spec.Sites {
		n := 0
		for id, ok := range have {
			if ok && site(id) == c.Site {
				n++
			}
		}
		if n < c.N {
			out = append(out, c.Site)
		}
	}
	return out
}

// siteCounts turns per-site counts into the report's list (sites with a
// count above zero, by name), with each site's bytes and, from since, when
// its oldest missing copy was first seen missing.
func siteCounts(n, bytes, since map[string]int64) []meta.SiteCount {
	var out []meta.SiteCount
	for site, k := range n {
		if k > 0 {
			out = append(out, meta.SiteCount{Site: site, N: k, Bytes: max(bytes[site], 0), Since: since[site]})
		}
	}
	slices.SortFunc(out, func(a, b meta.SiteCount) int { return strings.Compare(a.Site, b.Site) })
	return out
}
