package fsx

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Op names one kind of operation.
type Op int

// The operations. Weights (Config.Weights) are indexed by them.
const (
	OpWrite     Op = iota // pwrite through an open descriptor
	OpAppend              // open the name O_APPEND, write, close
	OpRead                // pread through an open descriptor
	OpReadPath            // open the name, read a range, close
	OpTruncate            // truncate(2) by name
	OpFtruncate           // ftruncate(2) on an open descriptor
	OpFsync               // fsync(2)
	OpFdatasync           // fdatasync(2)
	OpReopen              // close a descriptor, open a name (creating, sometimes O_TRUNC)
	OpRename              // rename a name, also over an existing one
	OpLink                // link a name to a free name
	OpUnlink              // unlink a name (descriptors keep the file)
	OpVerify              // read a whole file through a fresh open
	OpPunchHole           // fallocate(PUNCH_HOLE|KEEP_SIZE) on an open descriptor
	OpZeroRange           // fallocate(ZERO_RANGE), with or without KEEP_SIZE
	numOps
)

var opNames = [numOps]string{"write", "append", "read", "readpath", "truncate", "ftruncate",
	"fsync", "fdatasync", "reopen", "rename", "link", "unlink", "verify", "punchhole", "zerorange"}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", int(o))
}

// DefaultWeights is the operation mix: mostly writes and reads, enough
// metadata churn to move data between names and descriptors.
var DefaultWeights = map[Op]int{
	OpWrite: 32, OpAppend: 5, OpRead: 24, OpReadPath: 4, OpTruncate: 5, OpFtruncate: 5,
	OpFsync: 2, OpFdatasync: 2, OpReopen: 6, OpRename: 4, OpLink: 1, OpUnlink: 2, OpVerify: 1,
	OpPunchHole: 2, OpZeroRange: 2,
}

// Config sets up a run. Zero fields take the defaults noted.
type Config struct {
	Dir         string // existing directory; the run owns the names f0, f1, … in it
	Seed        uint64
	Ops         int        // default 1000
	Names       int        // file names in play, default 4
	Handles     int        // open descriptors, default 3
	BlockSize   int64      // the boundaries writes aim at, default 4 MiB
	MaxFileSize int64      // default 4 blocks
	MaxIO       int64      // largest write or read, default 3 blocks (capped by MaxFileSize)
	LogTail     int        // operations kept for the failure report, default 50
	Weights     map[Op]int // default DefaultWeights
	// Keep leaves the files in place after a successful run (Stats.Final
	// says what they hold), for a caller that checks them again later.
	Keep bool
	// Progress, if set, is called every ProgressEvery operations.
	Progress      func(done int, elapsed time.Duration)
	ProgressEvery int // default 2000

	afterOp func(r *runner, i int, desc string) // test hook
}

// Stats summarises a run.
type Stats struct {
	Ops          int
	Count        [numOps]int
	Time         [numOps]time.Duration // spent in each kind of operation
	BytesWritten int64
	BytesRead    int64
	Elapsed      time.Duration
	Slowest      time.Duration
	SlowestOp    string
	// Final maps each name left after a successful run to the SHA-256 of
	// its content.
	Final map[string][32]byte
}

func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ops in %v (%.0f ops/s), wrote %d MiB, read %d MiB, slowest %v (%s);",
		s.Ops, s.Elapsed.Round(time.Millisecond), float64(s.Ops)/s.Elapsed.Seconds(),
		s.BytesWritten>>20, s.BytesRead>>20, s.Slowest.Round(time.Microsecond), s.SlowestOp)
	for o := Op(0); o < numOps; o++ {
		fmt.Fprintf(&b, " %s=%d/%v", o, s.Count[o], s.Time[o].Round(time.Millisecond))
	}
	return b.String()
}

// Failure is a difference between the file system and the model, or an
// operation that failed.
type Failure struct {
	Seed uint64
	Op   int      // index of the failing operation (0-based); Ops for the final verification
	Ops  int      // operations the run was configured with
	What string   // the operation
	Err  string   // what went wrong
	Log  []string // the operations before it, oldest first
}

// ReplayOps is the smallest operation count that reproduces the failure.
func (f *Failure) ReplayOps() int { return min(f.Op+1, f.Ops) }

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fsx: seed %d, op %d (%s): %s\n", f.Seed, f.Op, f.What, f.Err)
	fmt.Fprintf(&b, "replay with seed %d and %d ops; last %d ops:\n", f.Seed, f.ReplayOps(), len(f.Log))
	for _, l := range f.Log {
		b.WriteString("  ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Run executes the operations and returns the first failure (a *Failure)
// or an error setting the run up. On success it removes its files.
func Run(cfg Config) (Stats, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return Stats{}, err
	}
	defer r.closeAll()
	start := time.Now()
	for i := 0; i < r.cfg.Ops; i++ {
		r.opIndex = i
		op := r.pickOp()
		t0 := time.Now()
		desc, err := r.do(&op)
		d := time.Since(t0)
		r.stats.Count[op]++
		r.stats.Time[op] += d
		if d > r.stats.Slowest {
			r.stats.Slowest, r.stats.SlowestOp = d, desc
		}
		if err != nil {
			return r.finish(start), r.failure(desc, err)
		}
		r.remember(desc)
		if r.cfg.afterOp != nil {
			r.cfg.afterOp(r, i, desc)
		}
		if r.cfg.Progress != nil && (i+1)%r.cfg.ProgressEvery == 0 {
			r.cfg.Progress(i+1, time.Since(start))
		}
	}
	r.opIndex = r.cfg.Ops
	if err := r.verifyAll(); err != nil {
		return r.finish(start), r.failure("final verify of every name and descriptor", err)
	}
	r.closeAll()
	r.stats.Final = map[string][32]byte{}
	for _, n := range r.existingNames() {
		r.stats.Final[n] = sha256.Sum256(r.byName[n].data)
	}
	if r.cfg.Keep {
		return r.finish(start), nil
	}
	for _, n := range r.names {
		if err := os.Remove(r.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r.finish(start), fmt.Errorf("fsx: cleanup: %w", err)
		}
	}
	return r.finish(start), nil
}

type runner struct {
	cfg     Config
	rng     *rand.Rand
	pool    []byte // the bytes writes are cut from
	names   []string
	byName  map[string]*inode
	handles []*handle
	nextIno int
	opIndex int
	log     []string // ring of the last LogTail descriptions
	logPos  int
	weights []int // cumulative
	stats   Stats
}

func newRunner(cfg Config) (*runner, error) {
	if cfg.Dir == "" {
		return nil, errors.New("fsx: Config.Dir is required")
	}
	if cfg.Ops == 0 {
		cfg.Ops = 1000
	}
	if cfg.Names == 0 {
		cfg.Names = 4
	}
	if cfg.Handles == 0 {
		cfg.Handles = 3
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 4 << 20
	}
	if cfg.MaxFileSize == 0 {
		cfg.MaxFileSize = 4 * cfg.BlockSize
	}
	if cfg.MaxIO == 0 {
		cfg.MaxIO = 3 * cfg.BlockSize
	}
	cfg.MaxIO = min(cfg.MaxIO, cfg.MaxFileSize)
	if cfg.LogTail == 0 {
		cfg.LogTail = 50
	}
	if cfg.Weights == nil {
		cfg.Weights = DefaultWeights
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 2000
	}
	if cfg.Names < 2 || cfg.Handles < 1 {
		return nil, errors.New("fsx: need at least 2 names and 1 handle")
	}
	r := &runner{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		byName: map[string]*inode{},
	}
	sum := 0
	for o := Op(0); o < numOps; o++ {
		sum += cfg.Weights[o]
		r.weights = append(r.weights, sum)
	}
	if sum == 0 {
		return nil, errors.New("fsx: all weights are zero")
	}
	var seed [32]byte
	for i := range 4 {
		v := r.rng.Uint64()
		for j := range 8 {
			seed[8*i+j] = byte(v >> (8 * j))
		}
	}
	r.pool = make([]byte, cfg.MaxIO+(1<<20))
	_, _ = rand.NewChaCha8(seed).Read(r.pool)
	for i := range cfg.Names {
		n := fmt.Sprintf("f%d", i)
		r.names = append(r.names, n)
		if err := os.Remove(r.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fsx: clear %s: %w", n, err)
		}
	}
	for i := range cfg.Handles {
		r.handles = append(r.handles, &handle{slot: i})
		if _, err := r.openHandle(r.handles[i], r.names[i%cfg.Names], false); err != nil {
			r.closeAll()
			return nil, fmt.Errorf("fsx: initial open: %w", err)
		}
	}
	return r, nil
}

func (r *runner) path(name string) string { return filepath.Join(r.cfg.Dir, name) }

func (r *runner) finish(start time.Time) Stats {
	r.stats.Ops = r.opIndex
	r.stats.Elapsed = time.Since(start)
	return r.stats
}

func (r *runner) remember(desc string) {
	line := fmt.Sprintf("#%d %s", r.opIndex, desc)
	if len(r.log) < r.cfg.LogTail {
		r.log = append(r.log, line)
		return
	}
	r.log[r.logPos] = line
	r.logPos = (r.logPos + 1) % len(r.log)
}

func (r *runner) failure(desc string, err error) *Failure {
	f := &Failure{Seed: r.cfg.Seed, Op: r.opIndex, Ops: r.cfg.Ops, What: desc, Err: err.Error()}
	f.Log = append(f.Log, r.log[r.logPos:]...)
	f.Log = append(f.Log, r.log[:r.logPos]...)
	return f
}

func (r *runner) closeAll() {
	for _, h := range r.handles {
		if h.f != nil {
			h.f.Close()
			h.f = nil
		}
	}
}

func (r *runner) pickOp() Op {
	x := r.rng.IntN(r.weights[len(r.weights)-1])
	for o, c := range r.weights {
		if x < c {
			return Op(o)
		}
	}
	panic("unreachable")
}

// pickSize draws an I/O size: mostly small, sometimes up to MaxIO.
func (r *runner) pickSize() int64 {
	m := r.cfg.MaxIO
	var n int64
	switch p := r.rng.IntN(100); {
	case p < 55:
		n = 1 + r.rng.Int64N(4096)
	case p < 88:
		n = 4096 + r.rng.Int64N(256<<10)
	case p < 99:
		n = (256 << 10) + r.rng.Int64N(1<<20)
	default:
		n = m/4 + r.rng.Int64N(m-m/4+1)
	}
	return max(1, min(n, m))
}

// pickOffset draws where an n-byte write to a file of the given size goes:
// anywhere inside, straddling a block boundary, or past EOF (a hole).
// The result keeps off+n within MaxFileSize.
func (r *runner) pickOffset(size, n int64) int64 {
	maxSize, bs := r.cfg.MaxFileSize, r.cfg.BlockSize
	var off int64
	switch p := r.rng.IntN(100); {
	case p < 40:
		off = r.rng.Int64N(size + 1)
	case p < 65:
		k := 1 + r.rng.Int64N(max(1, maxSize/bs))
		off = k*bs - r.rng.Int64N(n+1) + r.rng.Int64N(3) - 1
	case p < 85:
		off = size + 1 + r.rng.Int64N(bs+bs/2)
	default:
		off = r.rng.Int64N(maxSize)
	}
	return max(0, min(off, maxSize-n))
}

// pickLength draws a new length for a truncate: shrink, grow, or a block
// boundary (±1).
func (r *runner) pickLength(size int64) int64 {
	maxSize, bs := r.cfg.MaxFileSize, r.cfg.BlockSize
	switch p := r.rng.IntN(100); {
	case p < 45:
		return r.rng.Int64N(size + 1)
	case p < 80:
		return size + r.rng.Int64N(maxSize-size+1)
	default:
		k := r.rng.Int64N(maxSize/bs + 1)
		return max(0, min(maxSize, k*bs+r.rng.Int64N(3)-1))
	}
}

func (r *runner) data(n int64) []byte {
	start := r.rng.Int64N(int64(len(r.pool)) - n + 1)
	return r.pool[start : start+n]
}

// existingNames returns the names that exist, in a fixed order.
func (r *runner) existingNames() []string {
	var out []string
	for _, n := range r.names {
		if r.byName[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

func (r *runner) freeNames() []string {
	var out []string
	for _, n := range r.names {
		if r.byName[n] == nil {
			out = append(out, n)
		}
	}
	return out
}

func (r *runner) pickFrom(s []string) string { return s[r.rng.IntN(len(s))] }
