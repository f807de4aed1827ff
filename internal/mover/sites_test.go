package mover

import (
	"fmt"
	"slices"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// sitesMap is three sites of two hosts with two servers each.
func sitesMap() (meta.ServerMap, Holdings, map[string]string) {
	m := meta.ServerMap{Replicas: 1}
	held := Holdings{}
	siteOf := map[string]string{}
	for _, site := range []string{"a", "b", "c"} {
		for i := range 4 {
			id := fmt.Sprintf("%s%d", site, i)
			m.Servers = append(m.Servers, meta.Server{ID: id, Site: site, Host: fmt.Sprintf("%s-h%d", site, i%2), State: meta.StateUp})
			held[id] = map[block.Hash]int64{}
			siteOf[id] = site
		}
	}
	return m, held, siteOf
}

// TestPlanSiteSpec: a block of spec a:1,b:1,c:2 held only in sites a and b
// (site c was cut off when it was written) gets the copies site c lacks,
// on c's own servers, and is counted under-replicated for site c alone;
// once they are there, the plan is empty. A number spec next to it is
// planned as before.
func TestPlanSiteSpec(t *testing.T) {
	m, held, siteOf := sitesMap()
	spec, err := placement.ParseSpec("a:1,b:1,c:2")
	if err != nil {
		t.Fatal(err)
	}
	live := map[block.Hash]placement.Spec{}
	var hashes []block.Hash
	for i := range 50 {
		h := block.Sum(fmt.Appendf(nil, "site block %d", i))
		live[h] = spec
		hashes = append(hashes, h)
		// The writer's copies in a and b: the first server of each site's
		// rendezvous ranking.
		for _, site := range []string{"a", "b"} {
			var ids []string
			for _, s := range m.Servers {
				if s.Site == site {
					ids = append(ids, s.ID)
				}
			}
			held[placement.Pick(h, ids, 1)[0]][h] = 100
		}
	}
	number := block.Sum([]byte("number block"))
	live[number] = placement.Copies(2)
	tasks, st := PlanSpecs(m, held, live)
	if st.UnderReplicated != 51 || st.UnderBySite["c"] != 50 || st.UnderBySite["a"] != 0 || st.UnderBySite["b"] != 0 {
		t.Fatalf("stats %+v: want 51 under-replicated (the lost block too), 50 in site c", st)
	}
	if st.Lost != 1 {
		t.Fatalf("the number block, held nowhere, is not lost: %+v", st)
	}
	for _, task := range tasks {
		if len(task.Copy) != 2 || len(task.Remove) != 0 {
			t.Fatalf("block %s: copy %v remove %v; want two copies to site c", task.Hash.Short(), task.Copy, task.Remove)
		}
		for _, id := range task.Copy {
			if siteOf[id] != "c" {
				t.Fatalf("block %s: copy to %s of site %s", task.Hash.Short(), id, siteOf[id])
			}
		}
		if siteOf[task.Copy[0]] == siteOf[task.Copy[1]] && m.Servers[slices.IndexFunc(m.Servers, func(s meta.Server) bool { return s.ID == task.Copy[0] })].Host ==
			m.Servers[slices.IndexFunc(m.Servers, func(s meta.Server) bool { return s.ID == task.Copy[1] })].Host {
			t.Fatalf("block %s: both copies in site c on one host: %v", task.Hash.Short(), task.Copy)
		}
		for _, id := range task.Copy {
			held[id][task.Hash] = 100
		}
		have := map[string]bool{}
		for _, id := range append(task.Holders, task.Copy...) {
			have[id] = true
		}
		if task.under(have, func(id string) string { return siteOf[id] }) {
			t.Fatalf("block %s still under with %v", task.Hash.Short(), have)
		}
	}
	if len(tasks) != 50 {
		t.Fatalf("%d tasks, want 50", len(tasks))
	}
	delete(live, number)
	if tasks, st := PlanSpecs(m, held, live); len(tasks) != 0 || st.UnderReplicated != 0 || len(st.UnderBySite) != 0 {
		t.Fatalf("after the copies: %d tasks, stats %+v", len(tasks), st)
	}
	// A copy of the block in a site the spec does not name is misplaced
	// and removed once the spec's copies are all there.
	extra, checked := "b3", false
	for _, h := range hashes {
		if _, ok := held["b0"][h]; !ok {
			continue
		}
		held[extra][h] = 100
		tasks, st := PlanSpecs(m, held, map[block.Hash]placement.Spec{h: spec})
		if st.Misplaced != 1 || len(tasks) != 1 || !slices.Contains(tasks[0].Remove, extra) {
			t.Fatalf("extra copy on %s: tasks %+v stats %+v", extra, tasks, st)
		}
		checked = true
		break
	}
	if !checked {
		t.Fatal("no block had its site-b copy on b0")
	}
}
