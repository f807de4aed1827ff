// Command metaops times metadata operations on a directory: it creates N empty
// files (open O_CREAT|O_EXCL + close), then stats each, then unlinks each, and
// prints the rate of each phase.
//
//	metaops -dir /mnt/x/meta -n 10000 [-threads 1] [-unique-dir] [-drop-caches] [-cpu-pid DAEMONPID] [-json]
//
// The N files are split among the workers. With -unique-dir each worker works
// in its own directory DIR/wI (mdtest's -u: N ranks, one directory each);
// otherwise all share DIR. With -drop-caches (root) the kernel's caches are
// dropped before each phase (untimed), so stat and unlink look every name up
// in the file system instead of the kernel's dentry and attribute caches.
//
// Output (one line per phase, "key=value" fields, or one JSON object with -json):
//
//	phase=create ops=10000 secs=0.812345 ops_per_s=12310.2
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"tessera/bench/internal/proctree"
)

type phaseResult struct {
	Phase   string  `json:"phase"`
	Ops     int     `json:"ops"`
	Secs    float64 `json:"secs"`
	CPU     float64 `json:"daemon_cpu_s,omitempty"`
	OpsPerS float64 `json:"ops_per_s"`
}

func main() {
	dir := flag.String("dir", "", "directory to work in (created if missing; must hold no metaops files)")
	n := flag.Int("n", 10000, "number of files")
	threads := flag.Int("threads", 1, "number of concurrent workers (files are split among them)")
	asJSON := flag.Bool("json", false, "print one JSON object instead of key=value lines")
	cpuPid := flag.Int("cpu-pid", 0, "also report the CPU seconds used by this process tree (a FUSE daemon) during each phase")
	keep := flag.Bool("keep-dir", false, "do not remove the (now empty) directory at the end")
	drop := flag.Bool("drop-caches", false, "sync and drop the kernel's caches before each phase, untimed (needs root)")
	unique := flag.Bool("unique-dir", false, "each worker creates, stats and removes its files in its own directory DIR/wI (like mdtest -u)")
	flag.Parse()
	if *dir == "" || *n <= 0 || *threads <= 0 {
		fmt.Fprintln(os.Stderr, "usage: metaops -dir DIR [-n 10000] [-threads 1] [-json]")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fatal(err)
	}
	if *threads > *n {
		*threads = *n
	}
	names := make([]string, *n)
	for i := range names {
		d := *dir
		if *unique {
			// runPhase gives worker t the contiguous slice [t*n/threads, (t+1)*n/threads)
			d = filepath.Join(*dir, fmt.Sprintf("w%d", worker(i, *n, *threads)))
		}
		names[i] = filepath.Join(d, fmt.Sprintf("f%07d", i))
	}
	if *unique {
		for t := 0; t < *threads; t++ {
			if err := os.Mkdir(filepath.Join(*dir, fmt.Sprintf("w%d", t)), 0o755); err != nil {
				fatal(err)
			}
		}
	}

	phases := []struct {
		name string
		op   func(string) error
	}{
		{"create", func(p string) error {
			fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			return syscall.Close(fd)
		}},
		{"stat", func(p string) error {
			var st syscall.Stat_t
			return syscall.Stat(p, &st)
		}},
		{"unlink", func(p string) error { return syscall.Unlink(p) }},
	}

	var results []phaseResult
	for _, ph := range phases {
		if *drop {
			syscall.Sync()
			if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
				fatal(fmt.Errorf("-drop-caches: %w", err))
			}
		}
		cpu0 := daemonCPU(*cpuPid)
		secs, err := runPhase(names, *threads, ph.op)
		cpu := daemonCPU(*cpuPid) - cpu0
		if err != nil {
			fatal(fmt.Errorf("%s: %w", ph.name, err))
		}
		r := phaseResult{Phase: ph.name, Ops: len(names), Secs: secs, OpsPerS: float64(len(names)) / secs, CPU: cpu}
		results = append(results, r)
		if !*asJSON {
			fmt.Printf("phase=%s ops=%d secs=%.6f ops_per_s=%.1f", r.Phase, r.Ops, r.Secs, r.OpsPerS)
			if *cpuPid > 0 {
				fmt.Printf(" daemon_cpu_s=%.2f", r.CPU)
			}
			fmt.Println()
		}
	}
	if *asJSON {
		out := map[string]any{"dir": *dir, "n": *n, "threads": *threads, "unique_dir": *unique, "phases": results}
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	}
	if !*keep {
		if *unique {
			for t := 0; t < *threads; t++ {
				_ = os.Remove(filepath.Join(*dir, fmt.Sprintf("w%d", t)))
			}
		}
		_ = os.Remove(*dir)
	}
}

// worker returns which of `threads` workers runPhase hands name i of n to.
func worker(i, n, threads int) int {
	for t := 0; t < threads; t++ {
		if i < (t+1)*n/threads {
			return t
		}
	}
	return threads - 1
}

// runPhase applies op to every name using `threads` workers and returns the
// elapsed wall-clock seconds. Names are split into contiguous slices.
func runPhase(names []string, threads int, op func(string) error) (float64, error) {
	if threads > len(names) {
		threads = len(names)
	}
	var wg sync.WaitGroup
	errs := make([]error, threads)
	start := time.Now()
	for t := 0; t < threads; t++ {
		lo := t * len(names) / threads
		hi := (t + 1) * len(names) / threads
		wg.Add(1)
		go func(t int, part []string) {
			defer wg.Done()
			for _, p := range part {
				if err := op(p); err != nil {
					errs[t] = fmt.Errorf("%s: %w", p, err)
					return
				}
			}
		}(t, names[lo:hi])
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return secs, err
		}
	}
	return secs, nil
}

func daemonCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	s, err := proctree.Read(pid)
	if err != nil {
		fatal(fmt.Errorf("daemon %d: %w", pid, err))
	}
	return s.CPUSeconds
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "metaops:", err)
	os.Exit(1)
}
