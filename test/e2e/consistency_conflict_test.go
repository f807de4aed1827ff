package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// Concurrent writers on several mounts of one file: what survives.

// TestConsistencyRelaxedNoTornBlocks: relaxed promises nothing across
// clients but never a torn block.
func TestConsistencyRelaxedNoTornBlocks(t *testing.T) { checkNoTornBlocks(t, "relaxed") }

// TestConsistencyForcedNoTornBlocks: forced commits (last writer wins)
// promise nothing across clients but never a torn block.
func TestConsistencyForcedNoTornBlocks(t *testing.T) { checkNoTornBlocks(t, "forced") }

// checkNoTornBlocks has two mounts overwrite every whole block of a 1 MiB
// file (16 blocks) four times each, concurrently, in random orders, with an
// fsync after each pass; then a third mount, which never saw the file
// before, reads it: every block must be entirely one of the writes made to
// that block (never the initial content, never a mix of two writes).
func checkNoTornBlocks(t *testing.T, policy string) {
	c := startConsistency(t, 3, policy)
	const blocks, bs, passes = 16, consistencyBlockSize, 4
	id := func(w, pass, b int) uint64 { return 1<<32 | uint64(w)<<24 | uint64(pass)<<16 | uint64(b) }
	writeFile(t, c.path(0, "f"), stamped(1, blocks*bs))

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Go(func() {
			f, err := os.OpenFile(c.path(w, "f"), os.O_RDWR, 0)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for pass := range passes {
				for _, b := range rng.Perm(blocks) {
					if _, err := f.WriteAt(stamped(id(w, pass, b), bs), int64(b*bs)); err != nil {
						errs <- fmt.Errorf("mount %d: pwrite block %d: %w", w, b, err)
						return
					}
				}
				if err := f.Sync(); err != nil {
					errs <- fmt.Errorf("mount %d: fsync: %w", w, err)
					return
				}
			}
			if err := f.Close(); err != nil {
				errs <- fmt.Errorf("mount %d: close: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	got, err := os.ReadFile(c.path(2, "f"))
	must(t, err)
	if len(got) != blocks*bs {
		t.Fatalf("size %d after whole-block overwrites of a %d-byte file", len(got), blocks*bs)
	}
	from := [2]int{}
	for b := range blocks {
		blk := got[b*bs : (b+1)*bs]
		v, ok := stampOf(blk)
		w, pass, vb := int(v>>24&0xff), int(v>>16&0xff), int(v&0xffff)
		switch {
		case !ok:
			t.Errorf("block %d is torn: %s", b, describeStamped(blk))
		case v>>32 != 1 || w > 1 || pass >= passes || vb != b:
			t.Errorf("block %d holds stamp %#x, which is none of the writes to it", b, v)
		default:
			from[w]++
		}
	}
	t.Logf("final blocks: %d from mount 0, %d from mount 1", from[0], from[1])
}

// conflictWrite is one pwrite of a record, with its call and return times.
type conflictWrite struct {
	rec       int
	id        uint64
	call, ret time.Duration
}

// TestConsistencyPosixConflicts: under posix, write–write conflicts on the
// same blocks from two mounts lose nothing and mix nothing. Four writers
// (two goroutines on each of two mounts, each with its own handle) write
// 1000-byte records into a 256 KiB region (64 KiB blocks: records straddle
// pages and blocks, and every block holds records of all four writers):
//
//  1. disjoint: writer k writes every record r with r%4 == k once, in a
//     random order, then fsyncs. A third mount then reads every record as
//     exactly its writer's bytes: all disjoint writes survived.
//  2. overlapping: every writer writes 60 random records of the region.
//     Afterwards every record holds one whole write to it (never a mix of
//     two), and one that no other write to that record started after: a
//     write that returned before another one began cannot be the last.
func TestConsistencyPosixConflicts(t *testing.T) {
	c := startConsistency(t, 3, "posix")
	const region, rec, writers = 256 << 10, 1000, 4
	const nrec = region / rec
	writeFile(t, c.path(0, "f"), stamped(0, region))

	var mu sync.Mutex
	var log []conflictWrite
	start := time.Now()
	phases := 0
	run := func(phase string, recs func(k int, rng *rand.Rand) []int) {
		phases++
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for k := range writers {
			wg.Go(func() {
				f, err := os.OpenFile(c.path(k%2, "f"), os.O_RDWR, 0)
				if err != nil {
					errs <- err
					return
				}
				defer f.Close()
				rng := rand.New(rand.NewPCG(uint64(k), uint64(phases)))
				for i, r := range recs(k, rng) {
					// Distinct ids, never 0 (the initial content).
					w := conflictWrite{rec: r, id: uint64(phases)<<40 | uint64(k+1)<<32 | uint64(i+1)}
					w.call = time.Since(start)
					_, err := f.WriteAt(stamped(w.id, rec), int64(r*rec))
					w.ret = time.Since(start)
					if err != nil {
						errs <- fmt.Errorf("%s: writer %d: pwrite record %d: %w", phase, k, r, err)
						return
					}
					mu.Lock()
					log = append(log, w)
					mu.Unlock()
				}
				if err := f.Sync(); err != nil {
					errs <- fmt.Errorf("%s: writer %d: fsync: %w", phase, k, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// records reads the region through mount 2 and returns its records.
	records := func() [][]byte {
		got, err := os.ReadFile(c.path(2, "f"))
		must(t, err)
		if len(got) != region {
			t.Fatalf("size %d, want %d", len(got), region)
		}
		out := make([][]byte, nrec)
		for r := range out {
			out[r] = got[r*rec : (r+1)*rec]
		}
		return out
	}

	run("disjoint", func(k int, rng *rand.Rand) []int {
		var rs []int
		for r := k; r < nrec; r += writers {
			rs = append(rs, r)
		}
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		return rs
	})
	byRec := make(map[int][]conflictWrite)
	for _, w := range log {
		byRec[w.rec] = append(byRec[w.rec], w)
	}
	lost := 0
	for r, b := range records() {
		if len(byRec[r]) != 1 {
			t.Fatalf("disjoint phase: record %d written %d times", r, len(byRec[r]))
		}
		if want := byRec[r][0].id; !bytesAreStamp(b, want) {
			lost++
			if lost <= 10 {
				t.Errorf("disjoint phase: record %d (block %d) holds %s, want its one write, stamp %#x",
					r, r*rec/consistencyBlockSize, describeStamped(b), want)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("disjoint phase: %d of %d records lost their write", lost, nrec)
	}

	run("overlapping", func(k int, rng *rand.Rand) []int {
		rs := make([]int, 60)
		for i := range rs {
			rs[i] = rng.IntN(nrec)
		}
		return rs
	})
	byRec = make(map[int][]conflictWrite)
	byID := make(map[uint64]conflictWrite)
	for _, w := range log {
		byRec[w.rec] = append(byRec[w.rec], w)
		byID[w.id] = w
	}
	bad := 0
	for r, b := range records() {
		v, ok := stampOf(b)
		w, known := byID[v]
		var why string
		switch {
		case !ok:
			why = "a mix: " + describeStamped(b)
		case !known || w.rec != r:
			why = fmt.Sprintf("stamp %#x, which is no write to this record", v)
		default:
			for _, o := range byRec[r] {
				if o.call > w.ret {
					why = fmt.Sprintf("write %#x (returned at %v), but write %#x started after it, at %v",
						w.id, w.ret, o.id, o.call)
					break
				}
			}
		}
		if why != "" {
			bad++
			if bad <= 10 {
				t.Errorf("record %d (block %d) holds %s", r, r*rec/consistencyBlockSize, why)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records wrong after %d overlapping writes", bad, nrec, len(log))
	}
	t.Logf("%d writes of %d-byte records from 2 mounts in %v", len(log), rec, time.Since(start).Round(time.Millisecond))
}

// bytesAreStamp reports whether b is entirely stamp id.
func bytesAreStamp(b []byte, id uint64) bool {
	v, ok := stampOf(b)
	return ok && v == id
}
