// Command overwrite is bench/run.sh's small-overwrite job, in two steps so
// that the script can sample the target's store in between:
//
//	overwrite -file F -fill  [-size 8M]                      write SIZE random bytes, fsync, close
//	overwrite -file F -churn [-size 8M] [-bs 64K] [-n 300] [-seed 7]
//	                                                          N times: pwrite BS random bytes at a random
//	                                                          offset in [0, SIZE-BS], fsync; then close
//
// Like shared/acceptance/05-storage-space (what databases, logs and fsx do).
// Output, one line of key=value fields:
//
//	step=churn bytes=19660800 ops=300 secs=3.2 ops_per_s=93.4 size=8388608
//
// (Why not /proc/self/io write_bytes: on this kernel ext4 uses large folios and
// write_bytes counts the whole folio a 64 KiB write dirties, ~17x the bytes.)
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	file := flag.String("file", "", "file to write (created by -fill)")
	fill := flag.Bool("fill", false, "write the whole file once and fsync")
	churn := flag.Bool("churn", false, "overwrite random ranges of the file, fsync after each")
	sizeS := flag.String("size", "8M", "file size (K, M, G suffixes are powers of 1024)")
	bsS := flag.String("bs", "64K", "size of each overwrite")
	n := flag.Int("n", 300, "number of overwrites")
	seed := flag.Int64("seed", 7, "seed of the offsets (the data is random each run)")
	flag.Parse()
	size, err1 := parseSize(*sizeS)
	bs, err2 := parseSize(*bsS)
	if *file == "" || *fill == *churn || err1 != nil || err2 != nil || bs <= 0 || bs > size || *n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: overwrite -file F (-fill | -churn) [-size 8M] [-bs 64K] [-n 300] [-seed 7]")
		os.Exit(2)
	}
	start := time.Now()
	var ops int
	var bytes int64
	if *fill {
		f, err := os.OpenFile(*file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		check(err)
		buf := make([]byte, 1<<20)
		for off := int64(0); off < size; off += int64(len(buf)) {
			b := buf[:min(int64(len(buf)), size-off)]
			randFill(b)
			_, err := f.WriteAt(b, off)
			check(err)
			ops++
			bytes += int64(len(b))
		}
		check(f.Sync())
		check(f.Close())
	} else {
		f, err := os.OpenFile(*file, os.O_RDWR, 0)
		check(err)
		r := rand.New(rand.NewSource(*seed))
		buf := make([]byte, bs)
		for i := 0; i < *n; i++ {
			randFill(buf)
			off := r.Int63n(size - bs + 1)
			_, err := f.WriteAt(buf, off)
			check(err)
			check(f.Sync())
			ops++
			bytes += bs
		}
		check(f.Close())
	}
	secs := time.Since(start).Seconds()
	step := "fill"
	if *churn {
		step = "churn"
	}
	fmt.Printf("step=%s bytes=%d ops=%d secs=%.6f ops_per_s=%.1f size=%d\n",
		step, bytes, ops, secs, float64(ops)/secs, size)
}

// randFill fills b with bytes no block store can deduplicate.
func randFill(b []byte) {
	_, _ = rand.Read(b) //nolint:staticcheck // speed matters, not quality
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v * mult, err
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "overwrite:", err)
		os.Exit(1)
	}
}
