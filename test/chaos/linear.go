package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"tessera/test/lincheck"
)

// linFiles are the registers' record sizes: an inline file and one kept in
// blocks.
var linFiles = []int{64, 64 << 10}

const linInitial = 1

// linHistory is the registers' history for porcupine. A write that failed
// may or may not have happened: it stays pending (returns at the end of
// time), as Jepsen records an indeterminate operation. A failed read
// observed nothing and is left out.
type linHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (h *linHistory) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

func stamped(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v)
	}
	return b
}

func stampOf(b []byte, want int) uint64 {
	if len(b) != want || want == 0 {
		return lincheck.Torn
	}
	v := binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != v {
			return lincheck.Torn
		}
	}
	return v
}

// linSetup writes every register's initial value through mount 0.
func (r *run) linSetup() error {
	for f, size := range linFiles {
		if err := writeSync(filepath.Join(r.w.mounts[0].Mount(), fmt.Sprintf("lin%d", f)), stamped(linInitial, size)); err != nil {
			return fmt.Errorf("chaos: linearizability registers: %w", err)
		}
	}
	return nil
}

// linWorker reads and writes the registers on mount m through handles
// opened O_SYNC|O_RSYNC (the session policy's linearizable mode), paced so
// that the history stays checkable.
func (r *run) linWorker(ctx context.Context, m int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(400+m)))
	hs := make([]*os.File, len(linFiles))
	defer func() {
		for _, h := range hs {
			if h != nil {
				h.Close()
			}
		}
	}()
	buf := make([]byte, 64<<10+8)
	for i := 1; ctx.Err() == nil; i++ {
		pause(ctx, 50*time.Millisecond)
		f := rng.IntN(len(linFiles))
		size := linFiles[f]
		start := time.Now()
		if hs[f] == nil {
			h, err := os.OpenFile(filepath.Join(r.w.mounts[m].Mount(), fmt.Sprintf("lin%d", f)), os.O_RDWR|unix.O_SYNC|unix.O_RSYNC, 0)
			if err != nil {
				r.rec.fail("lin-open", err, start, "no-calm-errors", fmt.Sprintf("m%d: open lin%d", m, f))
				continue
			}
			hs[f] = h
		}
		in := lincheck.Input{File: f, Write: rng.IntN(2) == 0}
		op := porcupine.Operation{ClientId: m}
		r.rec.op("lin")
		var err error
		if in.Write {
			in.Value = uint64(m+1)<<32 | uint64(i)
			op.Call = int64(time.Since(r.lin.start))
			_, err = hs[f].WriteAt(stamped(in.Value, size), 0)
			op.Return = int64(time.Since(r.lin.start))
			if err != nil {
				op.Return = math.MaxInt64
			}
			op.Input, op.Output = in, uint64(0)
			r.lin.add(op)
		} else {
			op.Call = int64(time.Since(r.lin.start))
			var n int
			n, err = hs[f].ReadAt(buf[:size+8], 0)
			op.Return = int64(time.Since(r.lin.start))
			if err == nil || n == size {
				err = nil
				op.Input, op.Output = in, stampOf(buf[:n], size)
				r.lin.add(op)
			}
		}
		if err != nil {
			r.rec.fail("lin", err, start, "no-calm-errors", fmt.Sprintf("m%d: lin%d", m, f))
			hs[f].Close()
			hs[f] = nil
		}
	}
}

// checkLinear runs porcupine over the history (bounded by timeout):
// "ok", or why not.
func (r *run) checkLinear(timeout time.Duration) (string, bool) {
	r.lin.mu.Lock()
	hist := append([]porcupine.Operation(nil), r.lin.ops...)
	r.lin.mu.Unlock()
	torn := 0
	for _, op := range hist {
		if !op.Input.(lincheck.Input).Write && op.Output.(uint64) == lincheck.Torn {
			torn++
		}
	}
	if torn > 0 {
		r.rec.violate("linearizable", fmt.Sprintf("%d reads returned a short or torn record", torn))
	}
	model := lincheck.Model(linInitial)
	res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
	switch res {
	case porcupine.Ok:
		return fmt.Sprintf("ok (%d ops)", len(hist)), torn == 0
	case porcupine.Unknown:
		return fmt.Sprintf("undecided within %v (%d ops)", timeout, len(hist)), torn == 0
	}
	if where, err := r.keepLinear(model, hist, info); err != nil {
		r.rec.violate("linearizable", fmt.Sprintf("keeping the history: %v", err))
	} else {
		r.rec.violate("linearizable", "history and porcupine's picture of it in "+where)
	}
	if f, ok := lincheck.FirstFailure(model, hist, 2*time.Second, timeout/4); ok {
		r.rec.violate("linearizable", fmt.Sprintf("f%d first goes wrong at %v (%s) with %s; %d operations of it in the 2 s before (linwindow lists them)",
			f.File, time.Duration(f.At), r.lin.start.Add(time.Duration(f.At)).Format("15:04:05.000"), lincheck.Describe(f.Last), len(f.Window)))
	}
	stale := lincheck.StaleReads(hist)
	for _, s := range stale[:min(5, len(stale))] {
		r.rec.violate("linearizable", s)
	}
	r.rec.violate("linearizable", fmt.Sprintf("porcupine: the history of %d operations is not linearizable", len(hist)))
	return fmt.Sprintf("FAIL (%d ops)", len(hist)), false
}

// keepLinear writes a history porcupine refused into the run's directory:
// every operation as a JSON line (lincheck.Record: times in ns from the
// history's start, which start.txt gives on the wall clock; a pending write
// returns at math.MaxInt64) and porcupine's picture of the longest
// linearizable prefixes, so that a failed run can be studied
// (test/lincheck/cmd/linwindow finds where it first goes wrong).
func (r *run) keepLinear(model porcupine.Model, hist []porcupine.Operation, info porcupine.LinearizationInfo) (string, error) {
	dir := filepath.Join(r.cfg.Dir, "linearizability")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return "", err
	}
	if err := lincheck.WriteHistory(f, hist); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	start := r.lin.start.Format(time.RFC3339Nano) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "start.txt"), []byte(start), 0o644); err != nil {
		return "", err
	}
	if err := porcupine.VisualizePath(model, info, filepath.Join(dir, "history.html")); err != nil {
		return "", err
	}
	return dir, nil
}
