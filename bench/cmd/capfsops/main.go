// Command capfsops is the client side of bench/capfs.sh, CAPFS §4 Figure 7
// on Tessera (shared/seeds/004): N clients, client i one goroutine doing its
// I/O through mount point i (each mount its own `tessera mount` process), all
// started together; the aggregate bandwidth is the bytes of all clients over
// the time from the common start to the last client's end.
//
//	capfsops write   -mnts M1,M2,... -dir REL -layout shared|separate -bs BYTES -size TOTAL [-timeout 60s] [-seed 1]
//	capfsops read    -mnts M1,M2,... -dir REL -layout shared|separate -bs BYTES -size TOTAL [-timeout 60s]
//	capfsops contend -mnts M1,M2,... -dir REL -bs 4096 -time 5s
//	capfsops report  -rows rows.tsv -contend contend.tsv [-policies FILE] [-base relaxed]
//
// Layouts (write and read): "separate" gives client i its own file
// REL/sep.BS.i, written or read sequentially; "shared" is one file
// REL/shared.BS that client 0 creates before the start, and client i does
// requests k = 0, 1, ... at offset (k·N + i)·BS (interleaved, as MPI-IO
// programs do), so requests smaller than a block share blocks with the other
// clients'. Each client moves TOTAL/N bytes (rounded down to whole requests,
// at least one). A write is timed up to the end of fsync and close (the
// commit of the on-sync presets). A client that passes -timeout stops
// issuing requests; the line then says capped=1 and the bandwidth is of what
// was done. Every request starts with a 16-byte stamp (its offset and the
// seed) over per-client random bytes, so no two blocks are alike (the block
// store deduplicates) and a read can tell whose data it got: bad_reqs counts
// requests whose stamp is not their own offset (a lost or torn write), holes
// those of them that read zeros (never written, or lost with the block).
//
// contend: every client writes BS bytes at offset i·BS of REL/contend (all
// in the first block) and fsyncs, over and over, for -time; each fsync is a
// commit that races the other clients' (optimistic redo under the retry
// presets, last writer wins under forced ones). A failed write or fsync (EIO
// after the redo attempts) is counted in errors and the loop goes on.
//
// report prints the tables of bench/capfs.sh (report.go).
//
// Each other run prints one line of key=value fields:
// op, layout, clients, bs, bytes, ops, secs, MiB_per_s, ops_per_s,
// client_secs_min, client_secs_max, capped, errors, bad_reqs, holes, first_error.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	op := os.Args[1]
	if op == "report" {
		if err := runReport(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "capfsops report:", err)
			os.Exit(1)
		}
		return
	}
	fs := flag.NewFlagSet(op, flag.ExitOnError)
	mnts := fs.String("mnts", "", "comma-separated mount points, one per client")
	dir := fs.String("dir", "capfs", "directory under every mount point (the same one)")
	layout := fs.String("layout", "separate", "shared or separate")
	bs := fs.Int("bs", 1<<20, "request size in bytes")
	size := fs.Int64("size", 64<<20, "total bytes over all clients")
	timeout := fs.Duration("timeout", 60*time.Second, "a client stops issuing requests after this")
	dur := fs.Duration("time", 5*time.Second, "contend: how long")
	seed := fs.Uint64("seed", 1, "seed of the contents and the stamps")
	_ = fs.Parse(os.Args[2:])
	if *mnts == "" || *bs <= 0 || (*layout != "shared" && *layout != "separate") {
		usage()
	}
	r := run{op: op, mnts: strings.Split(*mnts, ","), dir: *dir, layout: *layout, bs: *bs, seed: *seed}
	var res result
	var err error
	switch op {
	case "write", "read":
		r.perClient = max(*size/int64(len(r.mnts))/int64(*bs), 1)
		res, err = r.transfer(*timeout)
	case "contend":
		r.layout = "contend"
		res, err = r.contend(*dur)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capfsops:", err)
		os.Exit(1)
	}
	res.print(r)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: capfsops write|read|contend -mnts M1,M2,... [-dir REL] [-layout shared|separate] [-bs N] [-size N] [-timeout D] [-time D]")
	os.Exit(2)
}

// run is one measurement's parameters.
type run struct {
	op, layout string
	mnts       []string
	dir        string
	bs         int
	perClient  int64 // requests per client (write, read)
	seed       uint64
}

// path is client i's file name for the run.
func (r run) path(i int) string {
	switch r.layout {
	case "separate":
		return filepath.Join(r.mnts[i], r.dir, fmt.Sprintf("sep.%d.%d", r.bs, i))
	case "shared":
		return filepath.Join(r.mnts[i], r.dir, fmt.Sprintf("shared.%d", r.bs))
	}
	return filepath.Join(r.mnts[i], r.dir, "contend")
}

// offset is the file offset of client i's k-th request.
func (r run) offset(i int, k int64) int64 {
	if r.layout == "shared" {
		return (k*int64(len(r.mnts)) + int64(i)) * int64(r.bs)
	}
	return k * int64(r.bs)
}

// clientResult is what one client did.
type clientResult struct {
	bytes, ops, badReqs, holes, errs int64
	end                              time.Time
	capped                           bool
	err                              error
}

// result is the aggregate of a run.
type result struct {
	bytes, ops, badReqs, holes, errs int64
	secs, minSecs, maxSecs           float64
	capped                           bool
	firstErr                         error
}

func (res result) print(r run) {
	mibs, opss := 0.0, 0.0
	if res.secs > 0 {
		mibs = float64(res.bytes) / (1 << 20) / res.secs
		opss = float64(res.ops) / res.secs
	}
	capped := 0
	if res.capped {
		capped = 1
	}
	e := "-"
	if res.firstErr != nil {
		e = strings.ReplaceAll(res.firstErr.Error(), " ", "_")
	}
	fmt.Printf("op=%s layout=%s clients=%d bs=%d bytes=%d ops=%d secs=%.3f MiB_per_s=%.1f ops_per_s=%.1f client_secs_min=%.3f client_secs_max=%.3f capped=%d errors=%d bad_reqs=%d holes=%d first_error=%s\n",
		r.op, r.layout, len(r.mnts), r.bs, res.bytes, res.ops, res.secs, mibs, opss, res.minSecs, res.maxSecs, capped, res.errs, res.badReqs, res.holes, e)
}

// openAll opens every client's file before the start (untimed). For a write
// client 0 creates and truncates the shared file first; the other mounts
// then find it by name.
func (r run) openAll() ([]int, error) {
	fds := make([]int, len(r.mnts))
	closeAll := func(n int) {
		for _, fd := range fds[:n] {
			syscall.Close(fd)
		}
	}
	for i := range r.mnts {
		flags := syscall.O_RDONLY
		switch {
		case r.op == "read":
		case r.layout == "separate" || i == 0:
			flags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC
		default:
			flags = syscall.O_WRONLY
		}
		fd, err := syscall.Open(r.path(i), flags|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			closeAll(i)
			return nil, fmt.Errorf("open %s: %w", r.path(i), err)
		}
		fds[i] = fd
	}
	return fds, nil
}

// content returns client i's request buffer: random bytes, distinct per
// client, layout, request size and seed (files of one run must not share
// blocks: a read would find them in the client's content-addressed cache);
// stamp overwrites its first 16 bytes per request.
func (r run) content(i int) []byte {
	b := make([]byte, r.bs)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[0:], uint64(i))
	binary.LittleEndian.PutUint64(key[8:], uint64(r.bs))
	binary.LittleEndian.PutUint64(key[16:], r.seed)
	copy(key[24:], r.layout)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func stamp(b []byte, off int64, seed uint64) {
	if len(b) >= 16 {
		binary.LittleEndian.PutUint64(b, uint64(off))
		binary.LittleEndian.PutUint64(b[8:], seed)
	}
}

// stampOK reports whether a read request's data starts with its own stamp.
func stampOK(b []byte, off int64, seed uint64) bool {
	if len(b) < 16 {
		return true
	}
	return binary.LittleEndian.Uint64(b) == uint64(off) && binary.LittleEndian.Uint64(b[8:]) == seed
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// transfer runs a write or read measurement.
func (r run) transfer(timeout time.Duration) (result, error) {
	fds, err := r.openAll()
	if err != nil {
		return result{}, err
	}
	return r.together(timeout, func(i int, deadline time.Time) clientResult {
		if r.op == "write" {
			return r.writer(i, fds[i], deadline)
		}
		return r.reader(i, fds[i], deadline)
	})
}

// together runs fn for every client from one common start and sums up.
func (r run) together(d time.Duration, fn func(i int, deadline time.Time) clientResult) (result, error) {
	n := len(r.mnts)
	out := make([]clientResult, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var t0 time.Time
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			out[i] = fn(i, t0.Add(d))
		}()
	}
	ready.Wait()
	t0 = time.Now()
	close(start)
	done.Wait()
	var res result
	res.minSecs = -1
	for _, c := range out {
		res.bytes += c.bytes
		res.ops += c.ops
		res.badReqs += c.badReqs
		res.holes += c.holes
		res.errs += c.errs
		res.capped = res.capped || c.capped
		if res.firstErr == nil && c.err != nil {
			res.firstErr = c.err
		}
		s := c.end.Sub(t0).Seconds()
		res.maxSecs = max(res.maxSecs, s)
		if res.minSecs < 0 || s < res.minSecs {
			res.minSecs = s
		}
	}
	res.secs = res.maxSecs
	return res, nil
}

func (r run) writer(i, fd int, deadline time.Time) clientResult {
	var c clientResult
	buf := r.content(i)
	for k := int64(0); k < r.perClient; k++ {
		if time.Now().After(deadline) {
			c.capped = true
			break
		}
		off := r.offset(i, k)
		stamp(buf, off, r.seed)
		n, err := syscall.Pwrite(fd, buf, off)
		c.bytes += int64(max(n, 0))
		if err == nil && n != len(buf) {
			err = fmt.Errorf("short write %d of %d", n, len(buf))
		}
		if err != nil {
			c.errs++
			c.err = fmt.Errorf("client %d pwrite at %d: %w", i, off, err)
			break
		}
		c.ops++
	}
	if err := syscall.Fsync(fd); err != nil {
		c.errs++
		c.err = errors.Join(c.err, fmt.Errorf("client %d fsync: %w", i, err))
	}
	if err := syscall.Close(fd); err != nil {
		c.errs++
		c.err = errors.Join(c.err, fmt.Errorf("client %d close: %w", i, err))
	}
	c.end = time.Now()
	return c
}

func (r run) reader(i, fd int, deadline time.Time) clientResult {
	var c clientResult
	buf := make([]byte, r.bs)
	for k := int64(0); k < r.perClient; k++ {
		if time.Now().After(deadline) {
			c.capped = true
			break
		}
		off := r.offset(i, k)
		n, err := syscall.Pread(fd, buf, off)
		if err != nil {
			c.errs++
			c.err = fmt.Errorf("client %d pread at %d: %w", i, off, err)
			break
		}
		c.bytes += int64(n)
		if n == 0 {
			break // end of file: the write was capped
		}
		c.ops++
		if !stampOK(buf[:n], off, r.seed) {
			c.badReqs++
			if isZero(buf[:min(n, 16)]) {
				c.holes++
			}
		}
	}
	syscall.Close(fd)
	c.end = time.Now()
	return c
}

// contend runs the contention loop for d.
func (r run) contend(d time.Duration) (result, error) {
	p0 := r.path(0)
	fd, err := syscall.Open(p0, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return result{}, fmt.Errorf("create %s: %w", p0, err)
	}
	syscall.Close(fd)
	fds := make([]int, len(r.mnts))
	for i := range r.mnts {
		if fds[i], err = syscall.Open(r.path(i), syscall.O_WRONLY|syscall.O_CLOEXEC, 0); err != nil {
			for _, fd := range fds[:i] {
				syscall.Close(fd)
			}
			return result{}, fmt.Errorf("open %s: %w", r.path(i), err)
		}
	}
	return r.together(d, func(i int, deadline time.Time) clientResult {
		var c clientResult
		buf := r.content(i)
		off := int64(i) * int64(r.bs)
		for seq := uint64(0); time.Now().Before(deadline); seq++ {
			stamp(buf, off, seq)
			n, err := syscall.Pwrite(fds[i], buf, off)
			if err == nil {
				err = syscall.Fsync(fds[i])
			}
			if err != nil {
				c.errs++
				if c.err == nil {
					c.err = fmt.Errorf("client %d: %w", i, err)
				}
				continue
			}
			c.bytes += int64(n)
			c.ops++
		}
		if err := syscall.Close(fds[i]); err != nil {
			c.errs++
		}
		c.end = time.Now()
		return c
	})
}
