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
	Placement []string // the servers the block belongs on, best first
	Holders   []string // listed servers holding it, in ID order
	Copy      []string // placement members that lack it
	Remove    []string // holders outside the placement
}

// Stats summarise a plan, as MoverProgress reports them.
type Stats struct {
	Blocks          int64 // live blocks
	UnderReplicated int64 // fewer live copies (on up or draining servers) than R
	Misplaced       int64 // a copy outside the placement
	Lost            int64 // no listed server holds it
	BytesToMove     int64 // sum of the copies' sizes
}

// Plan computes the tasks that bring every live block (hash -> R) to its
// placement over the up servers of m, given what the servers hold. Blocks
// that need nothing get no task; the tasks are in hash order.
func Plan(m meta.ServerMap, held Holdings, live map[block.Hash]int) ([]Task, Stats) {
	var ups []string
	state := make(map[string]string, len(m.Servers))
	dom := make(map[string]placement.Domain, len(m.Servers))
	for _, s := range m.Servers {
		state[s.ID] = s.State
		dom[s.ID] = placement.Domain{Site: s.Site, Rack: s.Rack, Host: s.Host}
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
		t := Task{Hash: h, R: r, Placement: placement.Spread(set.Pick(h, set.Len()), domainOf, r)}
		for _, id := range listed {
			if size, ok := held[id][h]; ok {
				t.Holders = append(t.Holders, id)
				t.Size = size
				if !slices.Contains(t.Placement, id) {
					t.Remove = append(t.Remove, id)
				}
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
