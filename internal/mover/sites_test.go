package mover

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

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
	if st.UnderBytesBySite["c"] != 50*100 || len(st.ShortBySite["c"]) != 50 || len(st.ShortBySite["a"]) != 0 {
		t.Fatalf("site c lacks %d bytes in %d blocks, want 5000 in 50 (site a: %d)", st.UnderBytesBySite["c"], len(st.ShortBySite["c"]), len(st.ShortBySite["a"]))
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

// TestSiteLagAge: a site's lag is dated by the oldest of its missing copies
// as the mover first saw it missing, across rounds; copies restored are
// forgotten, and a site missing nothing has no date.
func TestSiteLagAge(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New(Config{Now: func() time.Time { return now }})
	h := func(i int) block.Hash { return block.Sum(fmt.Appendf(nil, "lag %d", i)) }
	rounds := []struct {
		short map[string][]block.Hash
		want  map[string]int64 // site -> since, seconds
	}{
		{map[string][]block.Hash{"c": {h(1), h(2)}}, map[string]int64{"c": 1000}},
		{map[string][]block.Hash{"c": {h(2), h(3)}, "b": {h(4)}}, map[string]int64{"c": 1000, "b": 1010}},
		{map[string][]block.Hash{"c": {h(3)}, "b": {h(4)}}, map[string]int64{"c": 1010, "b": 1010}},
		{nil, map[string]int64{}},
	}
	for i, r := range rounds {
		m.noteShort(r.short)
		got := map[string]int64{}
		for site, ns := range m.since {
			got[site] = ns / 1e9
		}
		if !maps.Equal(got, r.want) {
			t.Fatalf("round %d: since %v, want %v", i, got, r.want)
		}
		now = now.Add(10 * time.Second)
	}
	c := siteCounts(map[string]int64{"c": 2, "a": 0}, map[string]int64{"c": 200}, map[string]int64{"c": 5})
	if len(c) != 1 || c[0] != (meta.SiteCount{Site: "c", N: 2, Bytes: 200, Since: 5}) {
		t.Fatalf("siteCounts = %+v", c)
	}
}
