// Package proctree reads CPU time and peak RSS of a process and all of its
// live descendants from /proc (Linux only).
package proctree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clkTck is USER_HZ, the unit of the times in /proc/PID/stat; it is 100 on
// every Linux architecture Go supports.
const clkTck = 100

type procStat struct {
	pid, ppid int
	ticks     uint64 // utime+stime+cutime+cstime
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0]=state(3) f[1]=ppid(4) ... utime(14)=f[11] stime=f[12] cutime=f[13] cstime=f[14]
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ps := procStat{pid: pid}
	ps.ppid, _ = strconv.Atoi(f[1])
	for _, k := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		if v > 0 {
			ps.ticks += uint64(v)
		}
	}
	return ps, nil
}

// Tree returns pid followed by all of its live descendants.
func Tree(pid int) []int {
	ents, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		st, err := readStat(p)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], p)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Sample is a snapshot of a process tree.
type Sample struct {
	CPUSeconds float64 // user+system, including reaped children
	HWMKiB     int64   // sum of VmHWM over the live processes
	MaxHWMKiB  int64   // largest single VmHWM
	Procs      int
}

// Read samples pid's process tree. It fails if pid itself is gone.
func Read(pid int) (Sample, error) {
	if _, err := readStat(pid); err != nil {
		return Sample{}, err
	}
	var s Sample
	for _, p := range Tree(pid) {
		st, err := readStat(p)
		if err != nil {
			continue
		}
		s.Procs++
		s.CPUSeconds += float64(st.ticks) / clkTck
		h := hwm(p)
		s.HWMKiB += h
		if h > s.MaxHWMKiB {
			s.MaxHWMKiB = h
		}
	}
	return s, nil
}

func hwm(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

// IO is the sum of /proc/PID/io over a process tree (bytes).
type IO struct {
	RChar, WChar          int64 // read/write syscalls of any kind (files, sockets, /dev/fuse)
	ReadBytes, WriteBytes int64 // storage layer: pages read from disk, pages dirtied (to be written back)
	CancelledWriteBytes   int64 // dirty pages truncated away before write-back
	Procs                 int
}

// ReadIO sums /proc/PID/io over pid and its live descendants. It fails if
// pid itself is gone or its io file cannot be read (not root?).
func ReadIO(pid int) (IO, error) {
	var s IO
	for i, p := range Tree(pid) {
		v, err := readIO(p)
		if err != nil {
			if i == 0 {
				return s, err
			}
			continue
		}
		s.Procs++
		s.RChar += v.RChar
		s.WChar += v.WChar
		s.ReadBytes += v.ReadBytes
		s.WriteBytes += v.WriteBytes
		s.CancelledWriteBytes += v.CancelledWriteBytes
	}
	return s, nil
}

func readIO(pid int) (IO, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return IO{}, err
	}
	var s IO
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			s.RChar = n
		case "wchar":
			s.WChar = n
		case "read_bytes":
			s.ReadBytes = n
		case "write_bytes":
			s.WriteBytes = n
		case "cancelled_write_bytes":
			s.CancelledWriteBytes = n
		}
	}
	return s, nil
}
