package mover

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// cluster is a simulated cluster for planning tests: a map and what each
// server holds.
type cluster struct {
	m    meta.ServerMap
	held Holdings
	live map[block.Hash]int
}

func newCluster(n, r, blocks int) *cluster {
	c := &cluster{m: meta.ServerMap{Replicas: r}, held: Holdings{}, live: map[block.Hash]int{}}
	for i := range n {
		c.add(fmt.Sprintf("b%d", i))
	}
	for i := range blocks {
		c.live[block.Sum([]byte(fmt.Sprint(i)))] = r
	}
	c.placeAll()
	return c
}

func (c *cluster) add(id string) {
	c.m.Servers = append(c.m.Servers, meta.Server{ID: id, State: meta.StateUp})
	c.held[id] = map[block.Hash]int64{}
}

func (c *cluster) setState(id, state string) {
	for i := range c.m.Servers {
		if c.m.Servers[i].ID == id {
			c.m.Servers[i].State = state
		}
	}
	if state == meta.StateDown {
		delete(c.held, id) // a down server is not listed
	}
}

func (c *cluster) up(id string) bool {
	for _, s := range c.m.Servers {
		if s.ID == id {
			return s.State == meta.StateUp
		}
	}
	return false
}

// placeAll puts every block on its placement, as clients would.
func (c *cluster) placeAll() {
	var ups []string
	for _, s := range c.m.Servers {
		if s.State == meta.StateUp {
			ups = append(ups, s.ID)
		}
	}
	for h, r := range c.live {
		for _, id := range writerPick(h, ups, r) {
			c.held[id][h] = 100
		}
	}
}

// writerPick is the placement a client makes with equal loads on every
// server: r of the r+1 candidates, by the block's tie key.
func writerPick(h block.Hash, ups []string, r int) []string {
	flat := func(id string) placement.Domain { return placement.Domain{Host: id} }
	cands := placement.Candidates(placement.Pick(h, ups, len(ups)), flat, r)
	return placement.Choose(cands, flat, r, func(string) int64 { return 0 }, placement.TieKey(h))
}

// holders returns the listed servers holding h.
func (c *cluster) holders(h block.Hash) map[string]bool {
	have := map[string]bool{}
	for id, hs := range c.held {
		if _, ok := hs[h]; ok {
			have[id] = true
		}
	}
	return have
}

// apply executes tasks as the mover does: copies, then the removals
// Removable allows, calling check after every step.
func (c *cluster) apply(t *testing.T, tasks []Task, check func()) (copies, removes int) {
	t.Helper()
	for _, task := range tasks {
		have := c.holders(task.Hash)
		for _, dst := range task.Copy {
			c.held[dst][task.Hash] = task.Size
			have[dst] = true
			copies++
			check()
		}
		for _, id := range task.Remove {
			if task.Removable(id, have, c.up) {
				delete(c.held[id], task.Hash)
				delete(have, id)
				removes++
				check()
			}
		}
	}
	return copies, removes
}

// minLive returns the fewest copies any block has on listed servers.
func (c *cluster) minLive() int {
	least := 1 << 30
	for h := range c.live {
		least = min(least, len(c.holders(h)))
	}
	return least
}

func TestPlanSettled(t *testing.T) {
	c := newCluster(5, 2, 200)
	tasks, st := Plan(c.m, c.held, c.live)
	if len(tasks) != 0 || !reflect.DeepEqual(st, Stats{Blocks: 200}) {
		t.Fatalf("settled cluster: %d tasks, %+v", len(tasks), st)
	}
}

func TestPlanServerDown(t *testing.T) {
	c := newCluster(5, 2, 200)
	lost := len(c.held["b3"])
	c.setState("b3", meta.StateDown)
	tasks, st := Plan(c.m, c.held, c.live)
	if st.UnderReplicated != int64(lost) || st.Misplaced != 0 || st.BytesToMove != int64(lost)*100 {
		t.Fatalf("stats %+v; want %d under-replicated", st, lost)
	}
	for _, task := range tasks {
		if len(task.Copy) != 1 || len(task.Remove) != 0 || slices.Contains(task.Placement, "b3") {
			t.Fatalf("task %+v", task)
		}
	}
	c.apply(t, tasks, func() {})
	if _, st := Plan(c.m, c.held, c.live); !reflect.DeepEqual(st, Stats{Blocks: 200}) {
		t.Fatalf("after repair: %+v", st)
	}
}

func TestPlanServerAdded(t *testing.T) {
	const blocks, n, r = 2000, 4, 2
	c := newCluster(n, r, blocks)
	c.add("b4")
	tasks, st := Plan(c.m, c.held, c.live)
	copies, removes := c.apply(t, tasks, func() {
		if c.minLive() < r {
			t.Fatalf("a block went under %d copies", r)
		}
	})
	// The new server takes r/(n+1) of the copies: blocks*r/(n+1) move.
	want := blocks * r / (n + 1)
	if copies != removes || copies < want*8/10 || copies > want*12/10 {
		t.Fatalf("%d copies, %d removes; want about %d each", copies, removes, want)
	}
	if st.UnderReplicated != 0 || st.Misplaced != int64(len(tasks)) {
		t.Fatalf("stats %+v with %d tasks", st, len(tasks))
	}
	if len(c.held["b4"]) != copies {
		t.Fatalf("b4 holds %d, want %d", len(c.held["b4"]), copies)
	}
	if tasks, _ := Plan(c.m, c.held, c.live); len(tasks) != 0 {
		t.Fatalf("%d tasks after the rebalance", len(tasks))
	}
}

func TestPlanDrain(t *testing.T) {
	c := newCluster(4, 2, 300)
	c.setState("b1", meta.StateDraining)
	tasks, st := Plan(c.m, c.held, c.live)
	if st.Misplaced != int64(len(c.held["b1"])) || st.UnderReplicated != 0 {
		t.Fatalf("stats %+v; b1 holds %d", st, len(c.held["b1"]))
	}
	c.apply(t, tasks, func() {
		if c.minLive() < 2 {
			t.Fatal("a block went under 2 copies")
		}
	})
	if len(c.held["b1"]) != 0 {
		t.Fatalf("b1 still holds %d", len(c.held["b1"]))
	}
}

func TestRemovableNeedsPlacementAndR(t *testing.T) {
	c := newCluster(2, 2, 1)
	c.setState("b1", meta.StateDraining)
	tasks, _ := Plan(c.m, c.held, c.live)
	if len(tasks) != 1 || len(tasks[0].Copy) != 0 || !slices.Equal(tasks[0].Remove, []string{"b1"}) {
		t.Fatalf("tasks %+v", tasks)
	}
	task := tasks[0]
	// One up server left for R=2: the draining copy must stay.
	if task.Removable("b1", map[string]bool{"b0": true, "b1": true}, c.up) {
		t.Fatal("removable with one up copy for R=2")
	}
	c.add("b2")
	tasks, _ = Plan(c.m, c.held, c.live)
	task = tasks[0]
	if task.Removable("b1", map[string]bool{"b0": true, "b1": true}, c.up) {
		t.Fatal("removable before the new placement member holds it")
	}
	if !task.Removable("b1", map[string]bool{"b0": true, "b1": true, "b2": true}, c.up) {
		t.Fatal("not removable once both placement members hold it")
	}
}

func TestPlanLostAndPerBlockR(t *testing.T) {
	c := newCluster(4, 2, 10)
	ghost := block.Sum([]byte("nobody has me"))
	c.live[ghost] = 2
	var three block.Hash
	for h := range c.live {
		if h != ghost {
			three = h
			c.live[h] = 3
			break
		}
	}
	tasks, st := Plan(c.m, c.held, c.live)
	if st.Lost != 1 || st.UnderReplicated != 2 || len(tasks) != 1 || tasks[0].Hash != three || len(tasks[0].Copy) != 1 {
		t.Fatalf("stats %+v, tasks %+v", st, tasks)
	}
}

func TestPlanSpreadsOverHosts(t *testing.T) {
	c := newCluster(4, 2, 100)
	for i := range c.m.Servers {
		c.m.Servers[i].Host = fmt.Sprintf("h%d", i/2) // b0,b1 on h0; b2,b3 on h1
	}
	tasks, _ := Plan(c.m, c.held, c.live)
	c.apply(t, tasks, func() {})
	host := func(id string) string { return map[string]string{"b0": "h0", "b1": "h0", "b2": "h1", "b3": "h1"}[id] }
	for h := range c.live {
		hosts := map[string]bool{}
		for id := range c.holders(h) {
			hosts[host(id)] = true
		}
		if len(hosts) != 2 {
			t.Fatalf("block %s on hosts %v", h.Short(), hosts)
		}
	}
}

// TestPlanRandom applies random membership changes and checks that no step
// leaves a block under R (counting every listed copy) once it had R, and
// that a plan executed in full leaves nothing to do.
func TestPlanRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const r = 2
	c := newCluster(4, r, 150)
	next := 4
	for step := range 30 {
		var ups []string
		for _, s := range c.m.Servers {
			if s.State == meta.StateUp {
				ups = append(ups, s.ID)
			}
		}
		switch op := rng.IntN(3); {
		case op == 0 || len(ups) <= r+1:
			c.add(fmt.Sprintf("b%d", next))
			next++
		case op == 1:
			c.setState(ups[rng.IntN(len(ups))], meta.StateDraining)
		default:
			id := ups[rng.IntN(len(ups))]
			c.setState(id, meta.StateDown)
			c.held[id] = map[block.Hash]int64{} // gone for good: it comes back empty
			c.setState(id, meta.StateUp)
			c.setState(id, meta.StateDown)
		}
		floor := min(c.minLive(), r)
		tasks, _ := Plan(c.m, c.held, c.live)
		c.apply(t, tasks, func() {
			if c.minLive() < floor {
				t.Fatalf("step %d: a block went under %d copies", step, floor)
			}
		})
		if tasks, st := Plan(c.m, c.held, c.live); len(tasks) != 0 || st.UnderReplicated != 0 {
			t.Fatalf("step %d: %d tasks, %+v after a full round", step, len(tasks), st)
		}
	}
}

// A copy on any R of a block's R+1 candidates is placed: the mover leaves
// the writers' choice alone. An extra copy within the candidates and a copy
// outside them are removed; a lost copy is restored to the emptier server.
func TestPlanCandidateOptions(t *testing.T) {
	c := newCluster(4, 1, 0)
	ups := []string{"b0", "b1", "b2", "b3"}
	flat := func(id string) placement.Domain { return placement.Domain{Host: id} }
	h := block.Sum([]byte("one block"))
	cands := placement.Candidates(placement.Pick(h, ups, 4), flat, 1)
	var outside string
	for _, id := range ups {
		if !slices.Contains(cands, id) {
			outside = id
		}
	}
	c.live[h] = 1

	c.held[cands[1]][h] = 100 // the second candidate: a writer's choice
	if tasks, st := Plan(c.m, c.held, c.live); len(tasks) != 0 || st.Misplaced != 0 {
		t.Fatalf("copy on the second candidate: %d tasks, %+v; want none", len(tasks), st)
	}

	c.held[cands[0]][h] = 100 // an extra copy (another writer chose the first)
	c.held[outside][h] = 100  // and one outside the candidates
	tasks, st := Plan(c.m, c.held, c.live)
	if len(tasks) != 1 || st.Misplaced != 1 || len(tasks[0].Copy) != 0 || len(tasks[0].Remove) != 2 || !slices.Contains(tasks[0].Remove, outside) {
		t.Fatalf("extra copies: tasks %+v, %+v; want %s and one candidate removed", tasks, st, outside)
	}
	c.apply(t, tasks, func() {
		if len(c.holders(h)) < 1 {
			t.Fatal("the block lost its last copy")
		}
	})
	if n := len(c.holders(h)); n != 1 {
		t.Fatalf("%d copies after the removals, want 1", n)
	}

	// The copy is lost (say its server was wiped): restore it on the
	// candidate holding fewer bytes.
	for id := range c.held {
		delete(c.held[id], h)
	}
	c.held[outside][h] = 100 // the only copy left, outside the candidates
	other := block.Sum([]byte("filler"))
	c.held[cands[0]][other] = 1 << 20 // cands[0] is fuller
	tasks, _ = Plan(c.m, c.held, c.live)
	var task *Task
	for i := range tasks {
		if tasks[i].Hash == h {
			task = &tasks[i]
		}
	}
	if task == nil || !slices.Equal(task.Copy, []string{cands[1]}) {
		t.Fatalf("restore: %+v; want a copy to the emptier candidate %s", task, cands[1])
	}
}
