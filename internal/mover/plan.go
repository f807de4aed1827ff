package mover

import (
	"slices"

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
	R         int
	Placement []string // the servers the block belongs on (see Plan)
	Holders   []string // listed servers holding it, in ID order
	Copy      []string // placement members that lack it
	Remove    []string // holders outside the placement
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
		r := live[h]
		st.Blocks++
		t := Task{Hash: h, R: r}
		for _, id := range listed {
			if size, ok := held[id][h]; ok {
				t.Holders = append(t.Holders, id)
				t.Size = size
			}
		}
		cands := placement.Candidates(set.Pick(h, set.Len()), domainOf, r)
		t.Placement = bestOption(cands, placement.Options(cands, domainOf, r), t.Holders, usage)
		for _, id := range t.Holders {
			if !slices.Contains(t.Placement, id) {
				t.Remove = append(t.Remove, id)
			}
		}
		if len(t.Holders) < r {
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
