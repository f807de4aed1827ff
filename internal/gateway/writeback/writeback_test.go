package writeback_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/gateway/writeback"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// mutator makes seeded random changes in the fileset through the meta
// service, as a FUSE mount would.
type mutator struct {
	e    *env
	rng  *rand.Rand
	dirs []meta.Ino
	n    int
}

// benign are the answers a random change may get from the namespace
// itself (a name taken, a directory not empty, a move into itself); any
// other error fails the test: nothing may fail because home is away.
func benign(err error) bool {
	for _, b := range []error{meta.ErrExist, meta.ErrNotEmpty, meta.ErrNotFound, meta.ErrInvalid, meta.ErrIsDir, meta.ErrNotDir} {
		if errors.Is(err, b) {
			return true
		}
	}
	return false
}

func (m *mutator) name() string {
	m.n++
	return fmt.Sprintf("n%d", m.rng.IntN(m.n+20))
}

func (m *mutator) content() []byte {
	b := make([]byte, m.rng.IntN(3000))
	for i := range b {
		b[i] = byte('a' + m.rng.IntN(26))
	}
	return b
}

// pick returns a random entry of a random directory (ok false if empty).
func (m *mutator) pick() (dir meta.Ino, d meta.DirEntry, ok bool) {
	dir = m.dirs[m.rng.IntN(len(m.dirs))]
	ents, _, err := m.e.s.ReadDir(m.e.ctx, dir, "", 64, true)
	if err != nil || len(ents) == 0 {
		return dir, meta.DirEntry{}, false
	}
	return dir, ents[m.rng.IntN(len(ents))], true
}

func (m *mutator) step() error {
	e, ctx := m.e, m.e.ctx
	dir := m.dirs[m.rng.IntN(len(m.dirs))]
	switch r := m.rng.IntN(100); {
	case r < 15:
		in, err := e.s.Create(ctx, meta.CreateReq{Parent: dir, Name: m.name(), Mode: syscall.S_IFDIR | 0o755, Excl: true})
		if err == nil {
			m.dirs = append(m.dirs, in.Ino)
		}
		return err
	case r < 45:
		in, err := e.s.Create(ctx, meta.CreateReq{Parent: dir, Name: m.name(), Mode: syscall.S_IFREG | 0o644, Excl: true})
		if err == nil {
			e.write(in.Ino, m.content())
		}
		return err
	case r < 50:
		_, err := e.s.Create(ctx, meta.CreateReq{Parent: dir, Name: m.name(), Mode: syscall.S_IFLNK | 0o777, Target: "t" + m.name(), Excl: true})
		return err
	}
	parent, d, ok := m.pick()
	if !ok {
		return nil
	}
	switch r := m.rng.IntN(100); {
	case r < 30 && d.Inode.IsRegular():
		e.write(d.Ino, m.content())
		return nil
	case r < 40:
		_, err := e.s.SetAttr(ctx, d.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: uint32(0o600 + m.rng.IntN(0o100))})
		return err
	case r < 70:
		to := m.dirs[m.rng.IntN(len(m.dirs))]
		_, err := e.s.Rename(ctx, parent, d.Name, to, m.name(), 0)
		return err
	case d.Inode.IsDir():
		return e.s.Rmdir(ctx, parent, d.Name)
	default:
		_, err := e.s.Unlink(ctx, parent, d.Name, d.Ino)
		return err
	}
}

func (m *mutator) run(t *testing.T, steps int) {
	t.Helper()
	for i := range steps {
		if err := m.step(); err != nil && !benign(err) {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// TestOutageThenDrain: changes made while home is down all succeed and
// queue up; with home back, three gateways drain it, one of them killed
// mid-drain (its claims are never answered), and home ends equal to the
// cache byte for byte, with nothing failed.
func TestOutageThenDrain(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t, meta.ConflictsCacheWins)
			m := &mutator{e: e, rng: rand.New(rand.NewPCG(seed, 14)), dirs: []meta.Ino{e.root}}
			// Some history home already has.
			m.run(t, 200)
			e.drain(e.applier("gw0", 0, 1), e.fileset())
			e.sameTrees()

			e.home.down.Store(true)
			m.run(t, 1200)
			st, err := e.s.WritebackStats(e.ctx, e.root)
			if err != nil || st.Depth < 100 {
				t.Fatalf("queue depth %d (%v) after 1,200 changes with home down", st.Depth, err)
			}
			for i := range 3 {
				res, err := e.applier(fmt.Sprintf("gw%d", i), i, 3).Step(e.ctx, e.fileset(), true)
				// (An operation that needs no home, such as the Put of a
				// file gone since, may complete.)
				if err != nil || res.Retry == 0 || res.Failed != 0 {
					t.Fatalf("step with home down: %+v %v", res, err)
				}
			}
			e.home.down.Store(false)
			e.clock.Advance(time.Minute)
			// gw0 claims a batch and dies before applying it.
			if _, err := e.s.ClaimWriteback(e.ctx, meta.ClaimReq{Root: e.root, Owner: "gw0", Shard: 0, Shards: 3, TTL: time.Minute, Limit: 64}); err != nil {
				t.Fatal(err)
			}
			// gw1 and gw2 go on as the only live gateways; gw0's claims
			// come back when its lease ends.
			for range 3 {
				if _, err := e.applier("gw1", 0, 2).Step(e.ctx, e.fileset(), true); err != nil {
					t.Fatal(err)
				}
				if _, err := e.applier("gw2", 1, 2).Step(e.ctx, e.fileset(), true); err != nil {
					t.Fatal(err)
				}
			}
			e.drain(e.applier("gw1", 0, 1), e.fileset())
			e.sameTrees()
		})
	}
}

// TestDeepTreePartlyRemoved: a deep tree made and partly removed before
// any of it reached home is applied without ENOENT or ENOTEMPTY.
func TestDeepTreePartlyRemoved(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	var chain []meta.Ino
	dir := e.root
	for i := range 60 {
		in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: dir, Name: fmt.Sprintf("d%d", i), Mode: syscall.S_IFDIR | 0o755, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		f, err := e.s.Create(e.ctx, meta.CreateReq{Parent: in.Ino, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		e.write(f.Ino, []byte(strings.Repeat("x", i)))
		chain = append(chain, in.Ino)
		dir = in.Ino
	}
	// A file moved out of the part that goes, then the lower half
	// removed bottom up.
	if _, err := e.s.Rename(e.ctx, chain[50], "f", e.root, "saved", 0); err != nil {
		t.Fatal(err)
	}
	for i := len(chain) - 1; i >= 30; i-- {
		if i != 50 {
			if _, err := e.s.Unlink(e.ctx, chain[i], "f", 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.s.Rmdir(e.ctx, chain[i-1], fmt.Sprintf("d%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	e.drain(e.applier("gw0", 0, 1), e.fileset())
	e.sameTrees()
	if _, err := os.Stat(filepath.Join(e.homeDir, "saved")); err != nil {
		t.Fatal(err)
	}
}

// TestSyncLag: an operation younger than the sync lag waits; flush
// applies it at once.
func TestSyncLag(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "a", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	f := e.fileset()
	f.SyncLag = time.Minute
	a := e.applier("gw0", 0, 1)
	if res, err := a.Step(e.ctx, f, false); err != nil || res.Applied != 0 {
		t.Fatalf("step before the lag: %+v %v", res, err)
	}
	e.clock.Advance(2 * time.Minute)
	if res, err := a.Step(e.ctx, f, false); err != nil || res.Applied != 1 {
		t.Fatalf("step after the lag: %+v %v", res, err)
	}
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "b", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Step(e.ctx, f, true); err != nil || res.Applied != 1 {
		t.Fatalf("flush step: %+v %v", res, err)
	}
	// A flush requested through the meta service makes what was queued
	// before it due for every gateway's normal rounds.
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "c", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Step(e.ctx, f, false); err != nil || res.Applied != 0 {
		t.Fatalf("step before the flush request: %+v %v", res, err)
	}
	if err := e.s.RequestFlush(e.ctx, e.root); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "d", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if res, err := a.Step(e.ctx, f, false); err != nil || res.Applied != 1 {
		t.Fatalf("step after the flush request: %+v %v, want c applied and d (queued after) waiting", res, err)
	}
	if _, err := a.Step(e.ctx, f, true); err != nil {
		t.Fatal(err)
	}
	e.sameTrees()
}

// TestConflicts: a file changed at home and in the cache since the last
// write-back is settled by the fileset's policy, with a report.
func TestConflicts(t *testing.T) {
	for _, c := range []struct {
		policy    string
		want      string // at home
		loserKept bool
	}{
		{meta.ConflictsCacheWins, "cache", false},
		{meta.ConflictsHomeWins, "home", false},
		{meta.ConflictsKeepBoth, "home", true},
	} {
		t.Run(c.policy, func(t *testing.T) {
			e := newEnv(t, c.policy)
			f := e.fileset()
			f.Conflicts = c.policy
			in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "f", Mode: syscall.S_IFREG | 0o644})
			if err != nil {
				t.Fatal(err)
			}
			e.write(in.Ino, []byte("v1"))
			a := e.applier("gw0", 0, 1)
			e.drain(a, f)
			// No conflict without a change at home.
			e.write(in.Ino, []byte("v2"))
			e.drain(a, f)
			if _, err := os.Stat(filepath.Join(e.homeDir, ".conflicts")); !os.IsNotExist(err) {
				t.Fatalf(".conflicts after a plain update: %v", err)
			}
			p := filepath.Join(e.homeDir, "f")
			if err := os.WriteFile(p, []byte("home"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.write(in.Ino, []byte("cache"))
			e.drain(a, f)
			if b, _ := os.ReadFile(p); string(b) != c.want {
				t.Fatalf("home has %q, want %q", b, c.want)
			}
			reports, _ := filepath.Glob(filepath.Join(e.homeDir, ".conflicts", "f.*.report"))
			if len(reports) != 1 {
				t.Fatalf("reports %v, want one", reports)
			}
			rep, _ := os.ReadFile(reports[0])
			if !strings.Contains(string(rep), "policy: "+c.policy) {
				t.Fatalf("report:\n%s", rep)
			}
			loser := strings.TrimSuffix(reports[0], ".report")
			b, err := os.ReadFile(loser)
			switch {
			case c.loserKept && string(b) != "cache":
				t.Fatalf("loser %s: %q %v, want the cache's version", loser, b, err)
			case !c.loserKept && err == nil:
				t.Fatalf("loser kept at %s under %v", loser, c.policy)
			}
		})
	}
}

// TestConflictMadeOnBothSides: a file made in the cache under a name
// home got meanwhile (a directory not listed while home was down) is a
// conflict settled by the policy, not an overwrite of home's file.
func TestConflictMadeOnBothSides(t *testing.T) {
	for _, c := range []struct {
		policy, want string
		loserKept    bool
	}{
		{meta.ConflictsCacheWins, "cache", false},
		{meta.ConflictsHomeWins, "home", false},
		{meta.ConflictsKeepBoth, "home", true},
	} {
		t.Run(c.policy, func(t *testing.T) {
			e := newEnv(t, c.policy)
			f := e.fileset()
			f.Conflicts = c.policy
			in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "both", Mode: syscall.S_IFREG | 0o644})
			if err != nil {
				t.Fatal(err)
			}
			e.write(in.Ino, []byte("cache"))
			p := filepath.Join(e.homeDir, "both")
			if err := os.WriteFile(p, []byte("home"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.drain(e.applier("gw0", 0, 1), f)
			if b, _ := os.ReadFile(p); string(b) != c.want {
				t.Fatalf("home has %q, want %q", b, c.want)
			}
			reports, _ := filepath.Glob(filepath.Join(e.homeDir, ".conflicts", "both.*.report"))
			if len(reports) != 1 {
				t.Fatalf("reports %v, want one", reports)
			}
			b, err := os.ReadFile(strings.TrimSuffix(reports[0], ".report"))
			if c.loserKept != (err == nil && string(b) == "cache") {
				t.Fatalf("loser: %q %v; kept wanted: %v", b, err, c.loserKept)
			}
		})
	}
}

// TestNewPutFindsItsOwnBytes: a new file's Put that finds at home a file
// with the cache's bytes (its own, applied before a crash) is no conflict.
func TestNewPutFindsItsOwnBytes(t *testing.T) {
	e := newEnv(t, meta.ConflictsKeepBoth)
	f := e.fileset()
	in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "mine", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	e.write(in.Ino, []byte("the same bytes"))
	if err := os.WriteFile(filepath.Join(e.homeDir, "mine"), []byte("the same bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.drain(e.applier("gw0", 0, 1), f)
	if _, err := os.Stat(filepath.Join(e.homeDir, ".conflicts")); !os.IsNotExist(err) {
		t.Fatalf(".conflicts after a Put that found its own bytes: %v", err)
	}
	e.sameTrees()
}

// TestDrainOverRPC: the applier works the queue through the meta
// service's wire protocol, as a gateway process does.
func TestDrainOverRPC(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, e.s, metarpc.ServeOptions{}) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	c, err := metarpc.Dial(ln.Addr().String(), metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	m := &mutator{e: e, rng: rand.New(rand.NewPCG(7, 14)), dirs: []meta.Ino{e.root}}
	e.home.down.Store(true)
	m.run(t, 300)
	// A file that cannot go home: a symlink over a directory at home.
	if err := os.Mkdir(filepath.Join(e.homeDir, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "taken", Mode: syscall.S_IFLNK | 0o777, Target: "x"}); err != nil {
		t.Fatal(err)
	}
	e.home.down.Store(false)
	a, err := writeback.New(writeback.Config{Queue: c, Source: metaSource{e.s}, Owner: "gw0", TTL: time.Minute,
		Backoff: time.Second, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Minute)
	defer cancel()
	if err := a.Drain(ctx, e.fileset(), e.wait, nil); err != nil {
		t.Fatal(err)
	}
	st, err := c.WritebackStats(e.ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	if st.Depth != 1 || len(st.Failed) != 1 || st.Failed[0].Path != "taken" || !strings.Contains(st.Failed[0].Err, "exists") {
		t.Fatalf("stats over the wire: %+v, want the symlink over a directory failed for good", st)
	}
	// Apart from it, home equals the cache.
	if err := os.Remove(filepath.Join(e.homeDir, "taken")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x", filepath.Join(e.homeDir, "taken")); err != nil {
		t.Fatal(err)
	}
	e.sameTrees()
}

// TestWaitDrained: flush's wait sees the queue shrink to nothing while a
// gateway applies it, and resolves the fileset by its path.
func TestWaitDrained(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	m := &mutator{e: e, rng: rand.New(rand.NewPCG(9, 14)), dirs: []meta.Ino{e.root}}
	m.run(t, 200)
	root, err := writeback.Resolve(e.ctx, e.s, "/fs/")
	if err != nil || root != e.root {
		t.Fatalf("Resolve: %d %v, want %d", root, err, e.root)
	}
	if _, err := writeback.Resolve(e.ctx, e.s, "/fs/nope/x"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("Resolve of a missing path: %v", err)
	}
	a := e.applier("gw0", 0, 1)
	var depths []int
	gateway := func(ctx context.Context) error { // the gateway works between looks
		_, err := a.Step(ctx, e.fileset(), true)
		e.clock.Advance(time.Minute)
		return err
	}
	failed, err := writeback.WaitDrained(e.ctx, e.s, e.root, gateway, func(st meta.WBStats) { depths = append(depths, st.Depth) })
	if err != nil || len(failed) != 0 {
		t.Fatalf("WaitDrained: %v %v", failed, err)
	}
	if len(depths) < 2 || depths[0] == 0 || depths[len(depths)-1] != 0 {
		t.Fatalf("depths seen %v: want from some down to 0", depths)
	}
	e.sameTrees()
}

// TestRetryWaitsDoubleToTheCap: an operation that home keeps refusing is
// tried again after Backoff (1 s here), then twice as long each time up to
// MaxBackoff (8 s), and never earlier.
func TestRetryWaitsDoubleToTheCap(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	if _, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "d", Mode: syscall.S_IFDIR | 0o755}); err != nil {
		t.Fatal(err)
	}
	e.home.down.Store(true)
	a := e.applier("gw0", 0, 1)
	var gaps []int
	last := 0
	for s := 0; len(gaps) < 6 && s < 100; s++ {
		res, err := a.Step(e.ctx, e.fileset(), true)
		if err != nil || res.Applied != 0 || res.Failed != 0 {
			t.Fatalf("step at %d s: %+v %v", s, res, err)
		}
		if res.Retry > 0 {
			if s > 0 {
				gaps = append(gaps, s-last)
			}
			last = s
		}
		e.clock.Advance(time.Second)
	}
	if want := []int{1, 2, 4, 8, 8, 8}; fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Fatalf("seconds between the tries: %v, want %v", gaps, want)
	}
}

func TestNewRejectsABackoffAboveItsCap(t *testing.T) {
	e := newEnv(t, meta.ConflictsCacheWins)
	_, err := writeback.New(writeback.Config{Queue: e.s, Source: metaSource{e.s}, Owner: "gw0",
		Backoff: time.Minute, MaxBackoff: time.Second})
	if err == nil || !strings.Contains(err.Error(), "MaxBackoff") || !strings.Contains(err.Error(), "below the base 1m0s") {
		t.Fatalf("New with Backoff 1m over MaxBackoff 1s: %v; want an error naming them", err)
	}
}
