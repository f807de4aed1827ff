// Command imcaops runs the two IMCa experiments' workloads (shared/seeds/001)
// on a mounted file system, for bench/imca.sh.
//
//	imcaops mktree -dir D [-dirs 20] [-files 1000]      create D/dNN/fNNNNN (empty files)
//	imcaops stat   -dir D [-dirs 20] [-files 1000]      stat every file of that tree, sequentially
//	imcaops write  -file F -rec 65536 [-n 1024] [-seed 1]  write n records of rec bytes (random, no two blocks alike), fsync
//	imcaops read   -file F -rec 65536 [-n 1024]         read the n records sequentially, timing each
//
// Each prints one line of key=value fields: ops, secs, ops_per_s, MiB_per_s and
// per-operation latency mean_us, p50_us, p90_us, p99_us, max_us.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "tree root")
	dirs := fs.Int("dirs", 20, "directories in the tree")
	files := fs.Int("files", 1000, "files per directory")
	file := fs.String("file", "", "record file")
	rec := fs.Int("rec", 65536, "record size in bytes")
	n := fs.Int("n", 1024, "number of records")
	seed := fs.Uint64("seed", 1, "seed of the record contents")
	_ = fs.Parse(os.Args[2:])
	var lat []time.Duration
	var bytes int64
	var err error
	t0 := time.Now()
	switch os.Args[1] {
	case "mktree":
		err = eachFile(*dir, *dirs, *files, true, func(p string) error {
			fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			return syscall.Close(fd)
		}, &lat)
	case "stat":
		var st syscall.Stat_t
		err = eachFile(*dir, *dirs, *files, false, func(p string) error { return syscall.Stat(p, &st) }, &lat)
	case "write":
		bytes, err = write(*file, *rec, *n, *seed)
	case "read":
		bytes, err = read(*file, *rec, *n, &lat)
	default:
		usage()
	}
	secs := time.Since(t0).Seconds()
	if err != nil {
		fmt.Fprintf(os.Stderr, "imcaops %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	ops := len(lat)
	if ops == 0 {
		ops = *n
	}
	fmt.Printf("op=%s ops=%d secs=%.3f ops_per_s=%.1f MiB_per_s=%.2f %s\n", os.Args[1], ops, secs,
		float64(ops)/secs, float64(bytes)/secs/(1<<20), latStats(lat))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: imcaops mktree|stat -dir D [-dirs 20] [-files 1000] | write|read -file F -rec BYTES [-n 1024]")
	os.Exit(2)
}

func eachFile(root string, dirs, files int, mk bool, op func(string) error, lat *[]time.Duration) error {
	for d := 0; d < dirs; d++ {
		dp := filepath.Join(root, fmt.Sprintf("d%02d", d))
		if mk {
			if err := os.MkdirAll(dp, 0o755); err != nil {
				return err
			}
		}
		for f := 0; f < files; f++ {
			p := filepath.Join(dp, fmt.Sprintf("f%05d", f))
			t := time.Now()
			if err := op(p); err != nil {
				return err
			}
			*lat = append(*lat, time.Since(t))
		}
	}
	return nil
}

func write(path string, rec, n int, seed uint64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(seed, uint64(rec)))
	buf := make([]byte, rec)
	var total int64
	for i := 0; i < n; i++ {
		for j := 0; j+8 <= len(buf); j += 8 {
			v := r.Uint64()
			buf[j], buf[j+1], buf[j+2], buf[j+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			buf[j+4], buf[j+5], buf[j+6], buf[j+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return total, err
		}
		total += int64(rec)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return total, err
	}
	return total, f.Close()
}

func read(path string, rec, n int, lat *[]time.Duration) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, rec)
	var total int64
	for i := 0; i < n; i++ {
		t := time.Now()
		m, err := f.ReadAt(buf, int64(i)*int64(rec))
		if err != nil {
			return total, fmt.Errorf("record %d: %w", i, err)
		}
		if m != rec {
			return total, fmt.Errorf("record %d: short read %d", i, m)
		}
		*lat = append(*lat, time.Since(t))
		total += int64(m)
	}
	return total, nil
}

func latStats(lat []time.Duration) string {
	if len(lat) == 0 {
		return ""
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3 }
	return fmt.Sprintf("mean_us=%.1f p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f",
		float64(sum.Nanoseconds())/1e3/float64(len(lat)), q(0.5), q(0.9), q(0.99), q(1))
}
