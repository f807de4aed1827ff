package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"tessera/test/cluster"
)

// cpuSample is the CPU time (nanoseconds on a CPU, /proc/PID/schedstat)
// of every process of the sites, of this driver (which runs the WAN
// links), and of the whole machine (/proc/stat, busy jiffies) at one
// moment: -cpu prints the growth over each measured operation, so that
// what else ran while a read or write was timed shows beside its time.
type cpuSample struct {
	at    time.Time
	procs []cluster.Proc
	ns    map[int]int64 // by pid
	sys   map[int]int64 // by pid: system (kernel) time, ms (/proc/PID/stat)
	flt   map[int]int64 // by pid: minor page faults (/proc/PID/stat)
	self  int64
	busy  int64 // machine: busy jiffies (all but idle and iowait)
	// links and peers: the WAN links' byte counters (Sites.LinkBytes,
	// EtcdPeerBytes), set by measure.
	links [][]int64
	peers []int64
	mark  int64 // the sites' log (Sites.LogMark)
}

func takeCPU(s *cluster.Sites) cpuSample {
	c := cpuSample{at: time.Now(), procs: s.Procs(), ns: map[int]int64{}, sys: map[int]int64{}, flt: map[int]int64{}}
	for _, p := range c.procs {
		c.ns[p.PID] = schedNS(strconv.Itoa(p.PID))
		c.sys[p.PID], c.flt[p.PID] = sysMS(strconv.Itoa(p.PID))
	}
	c.self = schedNS("self")
	c.busy = machineBusy()
	return c
}

// schedNS sums the first field of /proc/PID/task/*/schedstat: the time
// every thread of the process spent on a CPU, in ns (-1 when unreadable;
// /proc/PID/schedstat alone is the main thread's).
func schedNS(pid string) int64 {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return -1
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			sum += n
		}
	}
	return sum
}

// sysMS returns the system time of a process in ms (/proc/PID/stat field
// 15, in 10 ms ticks: the kernel's share of its CPU time) and its minor
// page faults (field 10); -1 when unreadable.
func sysMS(pid string) (ms, faults int64) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1, -1
	}
	_, after, ok := strings.Cut(string(b), ") ") // the command may hold spaces
	f := strings.Fields(after)
	if !ok || len(f) < 13 {
		return -1, -1
	}
	st, err1 := strconv.ParseInt(f[12], 10, 64) // stime: field 15 of the line
	flt, err2 := strconv.ParseInt(f[7], 10, 64) // minflt: field 10
	if err1 != nil || err2 != nil {
		return -1, -1
	}
	return st * 10, flt
}

// machineBusy is the busy jiffies of all CPUs (user, nice, system, irq,
// softirq, steal) from /proc/stat's first line.
func machineBusy() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest times are in user already
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return busy
}

// printCPU prints, as one comment line, the CPU milliseconds each site's
// processes (etcd, meta, blockd, mount) used between a and b, the
// driver's (WAN links), and the rest of the machine's (other users).
func printCPU(what string, a, b cpuSample) {
	wall := b.at.Sub(a.at)
	type key struct {
		site int
		kind string
	}
	per := map[key]int64{}
	var ours int64
	for _, p := range b.procs {
		x, ok := a.ns[p.PID]
		y := b.ns[p.PID]
		if !ok || x < 0 || y < 0 {
			continue
		}
		kind, _, _ := strings.Cut(p.Name, " ")
		per[key{p.Site, kind}] += y - x
		ours += y - x
	}
	self := b.self - a.self
	ours += self
	var parts []string
	for k, v := range per {
		parts = append(parts, fmt.Sprintf("%c.%s=%d", 'A'+k.site, k.kind, v/1e6))
	}
	sort.Strings(parts)
	// jiffies are 10 ms (USER_HZ 100)
	other := (b.busy-a.busy)*10 - ours/1e6
	fmt.Printf("# cpu %s: wall=%d ms driver(wan)=%d %s machine-other=%d\n", what, wall.Milliseconds(), self/1e6, strings.Join(parts, " "), other)
	var sys []string
	for _, p := range b.procs {
		if x, ok := a.sys[p.PID]; ok && x >= 0 && b.sys[p.PID] > x {
			sys = append(sys, fmt.Sprintf("%c.%s=%d(%d faults)", 'A'+p.Site, strings.ReplaceAll(p.Name, " ", ":"), b.sys[p.PID]-x, b.flt[p.PID]-a.flt[p.PID]))
		}
	}
	sort.Strings(sys)
	fmt.Printf("# sys %s: %s\n", what, strings.Join(sys, " "))
}
