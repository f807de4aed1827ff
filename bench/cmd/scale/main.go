// Command scale grows a namespace through a mounted file system and prints, per
// slice of files created, the figures issue 29 asks to watch for flatness:
// creates/s, stat and lookup latency (p50, p99), the listing rate of one full
// directory, store bytes per file and the resident memory of each role process.
// At the end it removes every file and directory it made and prints the
// removal rate. bench/scale.sh starts the cluster and runs it.
//
//	scale -root MNT/scale -files N -dirs D -workers W [-slice S] [-sample K]
//	      [-store-dir DIR | -etcd-metrics URL] [-pid role=PID ...]
//
// File i is ROOT/dNNNN/fNNNNNNNN with directory i mod D, so every directory
// grows evenly. Each slice's S files are created by W workers taking the next
// index from a shared counter (open O_CREAT|O_EXCL, close). After a slice,
// untimed except for what it measures:
//   - stat: lstat of K files picked at random among those of earlier slices
//     (older than the mount's 1 s entry timeout, so the kernel asks the daemon);
//   - lookup: lstat of K names that do not exist, in random directories (a
//     miss, always answered by the file system);
//   - list: one readdir (names and types, no per-entry stat) of directory 0;
//   - store bytes: the sum of file sizes under -store-dir (pebble), or etcd's
//     etcd_mvcc_db_total_size_in_bytes and ..._in_use_in_bytes from -etcd-metrics;
//   - VmRSS of each -pid.
//
// The run is bounded by -files; it stops at the first error.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type pidFlag []rolePID

type rolePID struct {
	role string
	pid  int
}

func (p *pidFlag) String() string { return fmt.Sprint(*p) }
func (p *pidFlag) Set(s string) error {
	role, v, ok := strings.Cut(s, "=")
	pid, err := strconv.Atoi(v)
	if !ok || role == "" || err != nil || pid <= 0 {
		return fmt.Errorf("-pid %q: want ROLE=PID", s)
	}
	*p = append(*p, rolePID{role, pid})
	return nil
}

type config struct {
	root        string
	files, dirs int
	workers     int
	slice       int
	sample      int
	storeDir    string
	etcdMetrics string
	pids        pidFlag
	seed        int64
}

func main() {
	var c config
	flag.StringVar(&c.root, "root", "", "directory to work in, on the mount (created; must not exist)")
	flag.IntVar(&c.files, "files", 100000, "files to create in all")
	flag.IntVar(&c.dirs, "dirs", 10, "directories the files are spread over")
	flag.IntVar(&c.workers, "workers", 2, "concurrent creators (and removers)")
	flag.IntVar(&c.slice, "slice", 0, "files per reported slice (default files/10)")
	flag.IntVar(&c.sample, "sample", 1000, "stats and lookups timed after each slice")
	flag.StringVar(&c.storeDir, "store-dir", "", "the meta store's directory (pebble): its size is the store bytes")
	flag.StringVar(&c.etcdMetrics, "etcd-metrics", "", "etcd's metrics URL (http://HOST:PORT/metrics): its db size is the store bytes")
	flag.Var(&c.pids, "pid", "ROLE=PID whose VmRSS is reported (repeatable)")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the stat and lookup samples")
	flag.Parse()
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func (c *config) check() error {
	switch {
	case c.root == "":
		return errors.New("-root is required")
	case c.files <= 0 || c.files > 100_000_000:
		return fmt.Errorf("-files %d: want 1 to 100000000", c.files)
	case c.dirs <= 0 || c.dirs > 10_000:
		return fmt.Errorf("-dirs %d: want 1 to 10000", c.dirs)
	case c.workers <= 0 || c.workers > 256:
		return fmt.Errorf("-workers %d: want 1 to 256", c.workers)
	case c.slice < 0:
		return fmt.Errorf("-slice %d: want a positive number of files", c.slice)
	case c.sample <= 0 || c.sample > 100_000:
		return fmt.Errorf("-sample %d: want 1 to 100000", c.sample)
	case c.storeDir != "" && c.etcdMetrics != "":
		return errors.New("-store-dir and -etcd-metrics: give one")
	}
	if c.slice == 0 {
		c.slice = max(c.files/10, 1)
	}
	if c.workers > c.slice {
		c.workers = c.slice
	}
	return nil
}

func (c *config) dir(d int) string  { return filepath.Join(c.root, fmt.Sprintf("d%04d", d)) }
func (c *config) path(i int) string { return filepath.Join(c.dir(i%c.dirs), fmt.Sprintf("f%08d", i)) }

func run(c config) error {
	if err := os.Mkdir(c.root, 0o755); err != nil {
		return err
	}
	for d := 0; d < c.dirs; d++ {
		if err := os.Mkdir(c.dir(d), 0o755); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewSource(c.seed))
	fmt.Printf("# files=%d dirs=%d workers=%d slice=%d sample=%d\n", c.files, c.dirs, c.workers, c.slice, c.sample)
	header(c)
	for done := 0; done < c.files; {
		n := min(c.slice, c.files-done)
		t0 := time.Now()
		if err := parallel(done, done+n, c.workers, func(i int) error {
			fd, err := syscall.Open(c.path(i), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return fmt.Errorf("create %s: %w", c.path(i), err)
			}
			return syscall.Close(fd)
		}); err != nil {
			return err
		}
		createRate := float64(n) / time.Since(t0).Seconds()
		older := done // files of earlier slices; the first slice samples its own
		if older == 0 {
			older = n
		}
		done += n
		if err := report(c, rng, done, older, createRate); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if err := parallel(0, c.files, c.workers, func(i int) error { return syscall.Unlink(c.path(i)) }); err != nil {
		return err
	}
	for d := 0; d < c.dirs; d++ {
		if err := os.Remove(c.dir(d)); err != nil {
			return err
		}
	}
	if err := os.Remove(c.root); err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	fmt.Printf("# removed %d files and %d directories in %.1f s: %.0f files/s\n", c.files, c.dirs, secs, float64(c.files)/secs)
	store, inUse := storeBytes(c)
	fmt.Printf("# after removal: store_bytes=%d in_use=%d%s\n", store, inUse, rssLine(c))
	return nil
}

// parallel runs op(i) for i in [from, to) on w workers; the first error stops it.
func parallel(from, to, w int, op func(int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var failed atomic.Bool
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for t := 0; t < w; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { first = err; failed.Store(true) })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func header(c config) {
	cols := []string{"files", "creates/s", "stat_p50_us", "stat_p99_us", "lookup_p50_us", "lookup_p99_us", "list_entries", "list_per_s", "store_MB", "store_B/file"}
	if c.etcdMetrics != "" {
		cols = append(cols, "inuse_B/file")
	}
	for _, p := range c.pids {
		cols = append(cols, p.role+"_rss_MiB")
	}
	fmt.Println("| " + strings.Join(cols, " | ") + " |")
	fmt.Println("|" + strings.Repeat("---:|", len(cols)))
}

func report(c config, rng *rand.Rand, done, older int, createRate float64) error {
	statLat := make([]time.Duration, c.sample)
	lookLat := make([]time.Duration, c.sample)
	var st syscall.Stat_t
	for k := range statLat {
		p := c.path(rng.Intn(older))
		t := time.Now()
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		statLat[k] = time.Since(t)
	}
	for k := range lookLat {
		p := filepath.Join(c.dir(rng.Intn(c.dirs)), fmt.Sprintf("missing%08d", rng.Intn(1<<30)))
		t := time.Now()
		err := syscall.Lstat(p, &st)
		lookLat[k] = time.Since(t)
		if !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("lookup of the missing %s: want ENOENT, got %v", p, err)
		}
	}
	t := time.Now()
	ents, err := os.ReadDir(c.dir(0))
	if err != nil {
		return fmt.Errorf("list %s: %w", c.dir(0), err)
	}
	listRate := float64(len(ents)) / time.Since(t).Seconds()
	want := (done + c.dirs - 1) / c.dirs
	if len(ents) != want {
		return fmt.Errorf("list %s: %d entries, want %d", c.dir(0), len(ents), want)
	}
	store, inUse := storeBytes(c)
	row := []string{
		strconv.Itoa(done), fmt.Sprintf("%.0f", createRate),
		us(pct(statLat, 50)), us(pct(statLat, 99)), us(pct(lookLat, 50)), us(pct(lookLat, 99)),
		strconv.Itoa(len(ents)), fmt.Sprintf("%.0f", listRate),
		fmt.Sprintf("%.1f", float64(store)/1e6), fmt.Sprintf("%.0f", float64(store)/float64(done)),
	}
	if c.etcdMetrics != "" {
		row = append(row, fmt.Sprintf("%.0f", float64(inUse)/float64(done)))
	}
	for _, p := range c.pids {
		row = append(row, fmt.Sprintf("%.0f", float64(rss(p.pid))/1024))
	}
	fmt.Println("| " + strings.Join(row, " | ") + " |")
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

// storeBytes is the meta store's size: the files under -store-dir, or etcd's
// db size and the part of it in use. -1 when it cannot be read.
func storeBytes(c config) (total, inUse int64) {
	switch {
	case c.storeDir != "":
		_ = filepath.WalkDir(c.storeDir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		return total, total
	case c.etcdMetrics != "":
		return etcdSizes(c.etcdMetrics)
	}
	return -1, -1
}

func etcdSizes(url string) (total, inUse int64) {
	total, inUse = -1, -1
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "etcd_mvcc_db_total_size_in_bytes":
			total = int64(v)
		case "etcd_mvcc_db_total_size_in_use_in_bytes":
			inUse = int64(v)
		}
	}
	return
}

// rss is the VmRSS of pid in KiB (0 when it cannot be read).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func rssLine(c config) string {
	var b strings.Builder
	for _, p := range c.pids {
		fmt.Fprintf(&b, " %s_rss_MiB=%.0f", p.role, float64(rss(p.pid))/1024)
	}
	return b.String()
}
