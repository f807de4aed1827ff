// Command readcpu measures what a mount's plain reads of fetched blocks
// cost it in CPU: a cluster of separate processes (meta, two block servers
// on hosts of their own, so no read is co-located; TLS), a writer mount and
// a reader mount. Each round writes a fresh file at the writer (fsync) and
// reads it once at the reader (cold in the kernel's page cache and in the
// reader's block cache), sampling the reader mount's CPU time (its threads'
// schedstat, in ns), user and system time (/proc/PID/stat, in 10 ms
// ticks), minor faults and wall time around the read. With more rounds
// than the reader's memory block cache holds, the later reads run with the
// cache full and evicting.
//
//	readcpu -bin tessera [-size 16] [-rounds 40] [-mount-args '--mem-cache 268435456']
//
// Output: one line per read, then the sums of the first and second half
// (user and sys ticks are too coarse for one read):
//
//	read 12 wall_ms=95 cpu_ms=31.2 user_ms=20 sys_ms=10 minflt=4100
//	sum first-half n=20 wall_ms=900 cpu_ms=610.5 user_ms=350 sys_ms=260 minflt=82000
package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"tessera/test/cluster"
)

func main() {
	bin := flag.String("bin", "", "the tessera binary (required)")
	sizeMiB := flag.Int("size", 16, "MiB per file")
	rounds := flag.Int("rounds", 40, "files written and read")
	mountArgs := flag.String("mount-args", "", "more flags for the reader mount, space-separated")
	flag.Parse()
	if *bin == "" {
		fail(fmt.Errorf("-bin is required"))
	}
	dir, err := os.MkdirTemp("/var/tmp", "tessera-readcpu-")
	fail(err)
	defer os.RemoveAll(dir)
	m, err := cluster.StartMulti(cluster.MultiOptions{
		Bin: *bin, Dir: dir, BlockServers: 2,
		MetaArgs: []string{"--block-size", strconv.Itoa(1 << 20)},
	})
	fail(err)
	defer m.Close()
	w, err := m.AddMount()
	fail(err)
	r, err := m.AddMount(strings.Fields(*mountArgs)...)
	fail(err)
	fmt.Printf("# %s, load %s, reader pid %d\n", time.Now().UTC().Format(time.RFC3339), loadavg(), r.PID())
	var rows [][5]float64
	for i := 1; i <= *rounds; i++ {
		data := make([]byte, *sizeMiB<<20)
		rand.Read(data)
		name := fmt.Sprintf("f%03d", i)
		fail(writeSync(filepath.Join(w.Mount(), name), data))
		u0, s0, f0 := procStat(r.PID())
		c0 := schedCPU(r.PID())
		t0 := time.Now()
		got, err := os.ReadFile(filepath.Join(r.Mount(), name))
		wall := time.Since(t0)
		fail(err)
		c1 := schedCPU(r.PID())
		u1, s1, f1 := procStat(r.PID())
		if !bytes.Equal(got, data) {
			fail(fmt.Errorf("read %d: content differs", i))
		}
		row := [5]float64{float64(wall.Microseconds()) / 1000, float64(c1-c0) / 1e6, u1 - u0, s1 - s0, float64(f1 - f0)}
		rows = append(rows, row)
		fmt.Printf("read %d wall_ms=%.1f cpu_ms=%.1f user_ms=%.0f sys_ms=%.0f minflt=%.0f\n", i, row[0], row[1], row[2], row[3], row[4])
	}
	half := len(rows) / 2
	for _, p := range []struct {
		name string
		rows [][5]float64
	}{{"first-half", rows[:half]}, {"second-half", rows[half:]}, {"all", rows}} {
		var sum [5]float64
		for _, r := range p.rows {
			for k := range sum {
				sum[k] += r[k]
			}
		}
		fmt.Printf("sum %s n=%d wall_ms=%.0f cpu_ms=%.1f user_ms=%.0f sys_ms=%.0f minflt=%.0f\n", p.name, len(p.rows), sum[0], sum[1], sum[2], sum[3], sum[4])
		fmt.Printf("median %s n=%d wall_ms=%.1f cpu_ms=%.1f\n", p.name, len(p.rows), med(p.rows, 0), med(p.rows, 1))
	}
	fmt.Printf("# load %s\n", loadavg())
}

func writeSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procStat returns pid's user and system time in ms and its minor faults.
func procStat(pid int) (user, sys float64, minflt int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	fail(err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// After the command: state(3) ppid pgrp session tty tpgid flags minflt(10)
	// cminflt majflt cmajflt utime(14) stime(15), numbered from pid = 1.
	minflt, _ = strconv.ParseInt(f[10-3], 10, 64)
	ut, _ := strconv.ParseFloat(f[14-3], 64)
	st, _ := strconv.ParseFloat(f[15-3], 64)
	const hz = 100 // USER_HZ
	return ut * 1000 / hz, st * 1000 / hz, minflt
}

// schedCPU returns the CPU time of pid's threads in ns (schedstat; threads
// that ended are not counted).
func schedCPU(pid int) int64 {
	ts, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	fail(err)
	var n int64
	for _, t := range ts {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		v, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		n += v
	}
	return n
}

func med(rows [][5]float64, k int) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = r[k]
	}
	return median(v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "readcpu:", err)
		os.Exit(1)
	}
}
