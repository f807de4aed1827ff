package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"tessera/test/lincheck"
)

// Linearizability of small files read and written from three mounts,
// checked with porcupine against a register per file.

// TestConsistencyLinearizablePosix: under posix, concurrent whole-record
// reads and writes from 3 mounts form a linearizable history per file.
func TestConsistencyLinearizablePosix(t *testing.T) {
	c := startConsistency(t, 3, "posix")
	checkLinearizable(t, c, 0)
}

// TestConsistencyLinearizableRSync: under the mount's default policy
// (session), handles opened O_SYNC|O_RSYNC make the same history
// linearizable (rNFS §2.2.2: an O_RSYNC read reflects every write
// acknowledged before it started, on any client).
func TestConsistencyLinearizableRSync(t *testing.T) {
	c := startConsistency(t, 3, "")
	checkLinearizable(t, c, unix.O_SYNC|unix.O_RSYNC)
}

// linFiles are the files of the linearizability tests: record sizes of
// inline files and of files kept in blocks (a file that fills its first
// block, 64 KiB here, is never inline).
var linFiles = []int{64, 64, 64 << 10, 64 << 10}

const (
	linWorkersPerMount = 2
	linOpsPerWorker    = 100
	linInitial         = 1 // every file's value before the run
	linTorn            = lincheck.Torn
)

// linInput is one operation on a register (lincheck's model).
type linInput = lincheck.Input

// linModel is a register per file, linInitial at first.
var linModel = lincheck.Model(linInitial)

// checkLinearizable creates the files of linFiles in the test's directory,
// then on each of the cluster's mounts runs linWorkersPerMount goroutines,
// each with its own handle on every file (opened with O_RDWR|extraFlags and
// kept open, so caches stay warm), doing linOpsPerWorker random operations:
// half pwrite at 0 of a whole record with a value unique in the run, half
// pread of the whole record. Call and return times (one monotonic clock)
// go to porcupine; a failure writes its HTML visualization to a temp file.
func checkLinearizable(t *testing.T, c *ccluster, extraFlags int) {
	for f, size := range linFiles {
		writeFileSync(t, c.path(0, fmt.Sprintf("f%d", f)), stamped(linInitial, size))
	}
	var mu sync.Mutex
	var hist []porcupine.Operation
	var wg sync.WaitGroup
	errs := make(chan error, len(c.mounts)*linWorkersPerMount)
	start := time.Now()
	for m := range c.mounts {
		for g := range linWorkersPerMount {
			client := m*linWorkersPerMount + g
			wg.Go(func() {
				if err := linWorker(c, m, client, extraFlags, start, func(op porcupine.Operation) {
					mu.Lock()
					hist = append(hist, op)
					mu.Unlock()
				}); err != nil {
					errs <- fmt.Errorf("mount %d, client %d: %w", m, client, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	elapsed := time.Since(start)
	torn := 0
	for _, op := range hist {
		if !op.Input.(linInput).Write && op.Output.(uint64) == linTorn {
			torn++
		}
	}
	if torn > 0 {
		t.Errorf("%d reads returned a short or torn record", torn)
	}

	res, info := porcupine.CheckOperationsVerbose(linModel, hist, time.Minute)
	t.Logf("%d operations from %d clients in %v: porcupine says %s", len(hist),
		len(c.mounts)*linWorkersPerMount, elapsed.Round(time.Millisecond), res)
	if res == porcupine.Ok {
		return
	}
	p := filepath.Join(os.TempDir(), "tessera-porcupine-"+sanitize(t.Name())+".html")
	if err := porcupine.VisualizePath(linModel, info, p); err != nil {
		t.Logf("writing porcupine's visualization: %v", err)
	} else {
		t.Logf("porcupine's visualization of the history: %s", p)
	}
	// TESSERA_LIN_DUMP=FILE writes the history for offline analysis: per
	// operation "client file write value output call" and "R return".
	if d := os.Getenv("TESSERA_LIN_DUMP"); d != "" {
		var b strings.Builder
		for _, op := range hist {
			in := op.Input.(linInput)
			fmt.Fprintf(&b, "%d %d %v %d %d %d\n", op.ClientId, in.File, in.Write, in.Value, op.Output.(uint64), op.Call)
			fmt.Fprintf(&b, "R %d\n", op.Return)
		}
		os.WriteFile(d, []byte(b.String()), 0o644)
	}
	stale := staleReads(hist)
	for i, s := range stale[:min(len(stale), 5)] {
		t.Logf("stale read %d of %d: %s", i+1, len(stale), s)
	}
	if res == porcupine.Unknown {
		t.Errorf("porcupine could not decide within a minute whether the history of %d operations is linearizable", len(hist))
	} else {
		t.Errorf("the history of %d reads and writes is not linearizable", len(hist))
	}
}

// linWorker is one client: it opens every file on mount m and runs its
// operations, reporting each to record. A failed system call ends it.
func linWorker(c *ccluster, m, client, extraFlags int, start time.Time, record func(porcupine.Operation)) error {
	hs := make([]*os.File, len(linFiles))
	for f := range linFiles {
		h, err := os.OpenFile(c.path(m, fmt.Sprintf("f%d", f)), os.O_RDWR|extraFlags, 0)
		if err != nil {
			return err
		}
		defer h.Close()
		hs[f] = h
	}
	rng := rand.New(rand.NewPCG(uint64(client), 11))
	buf := make([]byte, slices.Max(linFiles)+8)
	for i := range linOpsPerWorker {
		f := rng.IntN(len(linFiles))
		size := linFiles[f]
		in := linInput{File: f, Write: rng.IntN(2) == 0}
		op := porcupine.Operation{ClientId: client}
		var out uint64
		if in.Write {
			in.Value = uint64(client+1)<<32 | uint64(i+1)
			data := stamped(in.Value, size)
			op.Call = int64(time.Since(start))
			_, err := hs[f].WriteAt(data, 0)
			op.Return = int64(time.Since(start))
			if err != nil {
				return fmt.Errorf("f%d: pwrite: %w", f, err)
			}
		} else {
			op.Call = int64(time.Since(start))
			n, err := preadFull(hs[f], buf[:size+8], 0)
			op.Return = int64(time.Since(start))
			if err != nil {
				return fmt.Errorf("f%d: pread: %w", f, err)
			}
			v, ok := stampOf(buf[:n])
			if !ok || n != size {
				v = linTorn
			}
			out = v
		}
		op.Input, op.Output = in, out
		record(op)
	}
	return nil
}

// TestConsistencyLinearizableOneMount is the control of the two tests
// above: the same workload from six clients of one mount (one client
// process), under posix, which serializes a write and its commit against
// the mount's reads. It shows that the recording and the model accept a
// correct history. (Under a policy that keeps the kernel page cache, a
// pread racing a pwrite of 8 KiB can see part of it: the kernel does not
// make them atomic against each other.)
func TestConsistencyLinearizableOneMount(t *testing.T) {
	c := startConsistency(t, 1, "posix")
	c.mounts = append(c.mounts, c.mounts[0], c.mounts[0])
	checkLinearizable(t, c, 0)
}

// staleReads lists the reads that returned an overwritten value.
func staleReads(hist []porcupine.Operation) []string { return lincheck.StaleReads(hist) }
