// Command multisite reproduces rNFS Figures 7 and 8 on one machine (issue
// 13): three emulated sites (test/cluster's Sites: etcd, meta, two block
// servers and mounts per site, internal/wan links of the Figure 6 RTTs,
// A-B 60 ms, A-C 60 ms, B-C 120 ms), and per replication layout an
// overwrite+fsync of S bytes at the writer's site, then a synchronized
// read (O_SYNC|O_RSYNC, opened after the fsync) of it at another site.
//
//	multisite -bin tessera -etcd etcd [-sizes 1,4,16,64] [-runs 3]
//	          [-creates 400] [-threads 4] [-create-dirs one|each|both]
//	          [-rtt-div 1] [-etcd-wan] [-etcd-query batch=0] [-skip-io]
//	          [-cpu] [-etcd-leader SITE] [-settle D]
//
// Layouts (user.tessera.replicas of the directory; writer; sync reader):
//
//	remote-60   siteB:1              A  B   one remote server, 60 ms
//	remote-120  siteC:1              B  C   one remote server, 120 ms
//	two-60      siteA:1,siteB:1      A  B   two replicas, 60 ms
//	two-120     siteB:1,siteC:1      B  C   two replicas, 120 ms
//	three       siteA:1,siteB:1,siteC:1  A  B   three replicas (60/60/120)
//	local       siteA:1              A  A'  one site (A' is a second mount)
//
// Also, per size: a local read at A' (a second mount of A) of the three-
// replica file, and a plain read at C of it once C holds its copy
// (bytes fetched over C's block links are printed), against the single-
// site baseline: a plain read at A' of a file written at A with one copy
// at A, in a directory of its own (baselineDir); each plain read's open
// also timed alone (kind plainopen: the meta service's share). Creates: -threads
// workers per site, each creating -creates/threads empty files, one site
// at a time, all in one directory (-create-dirs one) or each worker in its
// own (each), or both one after the other. Output: one tab-separated line
// per measurement,
//
//	kind layout size_mib run seconds [wan_bytes]
//	creates site dirs workers seconds creates/s etcd_proposals/create etcd_leader_site
//
// With -cpu, each write and plain read is followed by comment lines: the
// CPU time (ms, all threads) of every site's etcd, meta, block servers and
// mounts, of this driver (which runs the WAN links and does the reads and
// writes), and of the rest of the machine (other users, kernel threads);
// the processes' system time; the bytes over every link; for writes the
// block bytes the writer's site sent to each other site. -etcd-leader
// moves the etcd leader to a site first; -settle waits before each plain
// read (diagnostics of bench/results/2026-11-25-multisite-causes.md).
//
// etcd_proposals/create is the growth of the site's etcd member's
// etcd_server_proposals_committed_total (Raft entries committed: one per
// write Txn, several Updates in one when etcdkv batches them) per create,
// less the idle cluster's own rate (heartbeats, sessions) measured over
// 10 s before the phase.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"tessera/internal/block"
	"tessera/test/cluster"
)

type layout struct {
	name, spec     string
	writer, reader int // site indexes; reader -1: A's second mount
}

var layouts = []layout{
	{"remote-60", "siteB:1", 0, 1},
	{"remote-120", "siteC:1", 1, 2},
	{"two-60", "siteA:1,siteB:1", 0, 1},
	{"two-120", "siteB:1,siteC:1", 1, 2},
	{"three", "siteA:1,siteB:1,siteC:1", 0, 1},
	{"local", "siteA:1", 0, -1},
}

func main() {
	bin := flag.String("bin", "", "the tessera binary (required)")
	etcd := flag.String("etcd", "etcd", "the etcd server binary")
	dir := flag.String("dir", "", "work directory (default: a new one under /var/tmp)")
	sizes := flag.String("sizes", "1,4,16,64", "file sizes in MiB")
	runs := flag.Int("runs", 3, "runs per size and layout")
	creates := flag.Int("creates", 400, "files created per site (0: no create phase)")
	threads := flag.Int("threads", 4, "create workers per site")
	createDirs := flag.String("create-dirs", "one", "creates in one directory per site (one), one per worker (each), or both")
	etcdQuery := flag.String("etcd-query", "", "URL parameters of the metas' etcd:// URL (e.g. batch=0)")
	rttDiv := flag.Int("rtt-div", 1, "divide the Figure 6 RTTs by this")
	etcdWAN := flag.Bool("etcd-wan", false, "etcd peer traffic pays the WAN too (default: etcd members without delay)")
	skipIO := flag.Bool("skip-io", false, "only the create phase")
	leaderAt := flag.String("etcd-leader", "", "make this site's etcd member the leader before the writes and reads (e.g. siteC; default: wherever etcd elected it)")
	flag.DurationVar(&settle, "settle", 0, "diagnostic: wait this long before each plain read (background work after the writes ends first)")
	flag.BoolVar(&showOps, "ops", false, "diagnostic: serve the mounts' and metas' /metrics and print (as # lines) the FUSE requests, meta calls and meta service calls of every plain read, with their total time")
	flag.BoolVar(&showCPU, "cpu", false, "print (as # lines) each process's CPU time and the WAN bytes per site during every write and plain read")
	flag.Parse()
	if *bin == "" {
		fail(fmt.Errorf("-bin is required"))
	}
	if *dir == "" {
		d, err := os.MkdirTemp("/var/tmp", "tessera-multisite-")
		fail(err)
		*dir = d
		defer os.RemoveAll(d)
	}
	var mib []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			fail(fmt.Errorf("-sizes: bad size %q", f))
		}
		mib = append(mib, n)
	}
	s, err := cluster.NewSites(cluster.SitesOptions{
		Bin: *bin, EtcdBin: *etcd, Dir: *dir, RTT: cluster.ScaleRTT(cluster.Figure6RTT(), *rttDiv),
		EtcdNoWAN: !*etcdWAN, EtcdURLQuery: *etcdQuery, MetaArgs: append([]string{"--block-size", strconv.Itoa(1 << 20)}, metricsArgs()...),
		MountArgs: metricsArgs(),
	})
	if s != nil {
		defer func() {
			if err := s.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "multisite: close:", err)
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "multisite: the sites did not come up:", err)
		fmt.Println("error\tstartup\t0\t0\tnan")
		return
	}
	a2, err := s.AddMount(0)
	fail(err)
	fmt.Printf("# rtt A-B %v A-C %v B-C %v; etcd across the WAN: %v; etcd URL parameters %q\n", s.RTT(0, 1), s.RTT(0, 2), s.RTT(1, 2), *etcdWAN, *etcdQuery)
	if *leaderAt != "" {
		i := slices.Index(s.Names(), *leaderAt)
		if i < 0 {
			fail(fmt.Errorf("-etcd-leader %q: no such site (%s)", *leaderAt, strings.Join(s.Names(), ", ")))
		}
		fail(s.MoveEtcdLeader(context.Background(), i))
	}
	if l := s.EtcdLeader(context.Background()); l >= 0 {
		fmt.Printf("# etcd leader: %s\n", s.Names()[l])
	}
	if !*skipIO {
		runIO(s, a2, mib, *runs)
		if l := s.EtcdLeader(context.Background()); l >= 0 {
			fmt.Printf("# etcd leader after the writes and reads: %s\n", s.Names()[l])
		}
	}
	if *creates > 0 {
		switch *createDirs {
		case "one", "each":
			runCreates(s, *creates, *threads, *createDirs == "each")
		case "both":
			runCreates(s, *creates, *threads, false)
			runCreates(s, *creates, *threads, true)
		default:
			fail(fmt.Errorf("-create-dirs %q: want one, each or both", *createDirs))
		}
	}
}

func runIO(s *cluster.Sites, a2 *cluster.Daemon, mib []int, runs int) {
	mnt := func(site int) string {
		if site < 0 {
			return a2.Mount()
		}
		return s.Mount(site).Mount()
	}
	for _, l := range append(layouts, layout{baselineDir, "siteA:1", 0, -1}) {
		d := filepath.Join(mnt(0), l.name)
		fail(os.Mkdir(d, 0o755))
		fail(unix.Setxattr(d, "user.tessera.replicas", []byte(l.spec), 0))
	}
	for _, size := range mib {
		for run := 1; run <= runs; run++ {
			for _, l := range layouts {
				name := fmt.Sprintf("f%d", size)
				data := make([]byte, size<<20)
				rand.Read(data)
				w := filepath.Join(mnt(l.writer), l.name, name)
				c0, up0 := measure(s), wanUp(s, l.writer)
				sec, err := overwriteSync(w, data)
				fail(err)
				row("write", l.name, size, run, sec, -1)
				note(s, c0, up0, l.writer, fmt.Sprintf("write %s %d %d", l.name, size, run))
				r := filepath.Join(mnt(l.reader), l.name, name)
				sec, err = readCheck(r, data, unix.O_SYNC|unix.O_RSYNC)
				fail(err)
				row("syncread", l.name, size, run, sec, -1)
				if l.name != "three" {
					continue
				}
				// A local read of the same data at A (second mount).
				sec, err = readCheck(filepath.Join(a2.Mount(), l.name, name), data, unix.O_SYNC|unix.O_RSYNC)
				fail(err)
				row("localread", l.name, size, run, sec, -1)
				// A plain read at C once C holds its copy (the mover
				// completes it in the background; bounded wait).
				waitCopies(s, 2, data)
				time.Sleep(settle)
				before := s.BlockBytesFrom(2)
				c0 = measure(s)
				o0 := scrapeOps(s.Mount(2), s.Meta(2))
				sec, open, err := readCheckOpen(filepath.Join(mnt(2), l.name, name), data, 0)
				fail(err)
				if showOps {
					printOps(fmt.Sprintf("plainread three@C %d %d", size, run), o0, scrapeOps(s.Mount(2), s.Meta(2)))
				}
				note(s, c0, nil, 2, fmt.Sprintf("plainread three@C %d %d", size, run))
				row("plainread", "three@C", size, run, sec, s.BlockBytesFrom(2)-before)
				row("plainopen", "three@C", size, run, open, -1)
				spread(s, 2, "three@C", size, data)
			}
			// The single-site baseline of plain reads: at A', data only at A,
			// in a directory only this baseline uses (baselineDir).
			name := fmt.Sprintf("f%d", size)
			data := make([]byte, size<<20)
			rand.Read(data)
			_, err := overwriteSync(filepath.Join(mnt(0), baselineDir, name), data)
			fail(err)
			time.Sleep(settle)
			c0 := measure(s)
			o0 := scrapeOps(a2, s.Meta(0))
			sec, open, err := readCheckOpen(filepath.Join(a2.Mount(), baselineDir, name), data, 0)
			fail(err)
			if showOps {
				printOps(fmt.Sprintf("plainread local@A %d %d", size, run), o0, scrapeOps(a2, s.Meta(0)))
			}
			note(s, c0, nil, 0, fmt.Sprintf("plainread local@A %d %d", size, run))
			row("plainread", "local@A", size, run, sec, -1)
			row("plainopen", "local@A", size, run, open, -1)
			spread(s, 0, "local@A", size, data)
		}
	}
}

// metricsArgs are the daemons' flags for -ops.
func metricsArgs() []string {
	if showOps {
		return []string{"--metrics", "127.0.0.1:0"}
	}
	return nil
}

// baselineDir holds the single-site baseline of plain reads (siteA:1). A'
// reads nothing else in it, so its read, like C's of the three-replica
// file, finds the kernel's entry of the directory as old as the previous
// run's read: in the "local" layout's directory, which A' sync-reads
// moments before, it would find it fresh and skip a lookup that C's read
// makes (a directory entry is kept 1 s).
const baselineDir = "single"

// showCPU is -cpu; showOps is -ops; settle is -settle.
var (
	showOps bool
	showCPU bool
	settle  time.Duration
)

// measure samples the CPU counters (and the links' byte counters) when
// -cpu is on.
func measure(s *cluster.Sites) *cpuSample {
	if !showCPU {
		return nil
	}
	c := takeCPU(s)
	c.mark = s.LogMark()
	c.links = s.LinkBytes()
	for i := range s.Names() {
		c.peers = append(c.peers, s.EtcdPeerBytes(i))
	}
	return &c
}

// wanUp returns the bytes site from has sent into each site's block
// servers so far (nil unless -cpu).
func wanUp(s *cluster.Sites, from int) []int64 {
	if !showCPU {
		return nil
	}
	out := make([]int64, len(s.Names()))
	for to := range out {
		if to != from {
			out[to] = s.BlockBytesTo(from, to)
		}
	}
	return out
}

// note prints the -cpu lines of one measured operation started at c0
// (with up0, the WAN bytes sent by site from into each site's servers
// then).
func note(s *cluster.Sites, c0 *cpuSample, up0 []int64, from int, what string) {
	if c0 == nil {
		return
	}
	printCPU(what, *c0, takeCPU(s))
	var links []string
	for from, row := range s.LinkBytes() {
		for to, n := range row {
			if d := n - c0.links[from][to]; d > 0 {
				links = append(links, fmt.Sprintf("%c>%c=%d", 'A'+from, 'A'+to, d))
			}
		}
	}
	for i := range s.Names() {
		if d := s.EtcdPeerBytes(i) - c0.peers[i]; d > 0 {
			links = append(links, fmt.Sprintf("etcd-%c=%d", 'A'+i, d))
		}
	}
	fmt.Printf("# link bytes %s: %s\n", what, strings.Join(links, " "))
	if strings.Contains(os.Getenv("GODEBUG"), "gctrace=1") {
		// The processes' Go collections meanwhile (run with GODEBUG=gctrace=1).
		for _, line := range strings.Split(s.LogSince(c0.mark), "\n") {
			if strings.Contains(line, "gc ") && strings.Contains(line, "@") {
				fmt.Printf("# gc %s: %s\n", what, line)
			}
		}
	}
	if up0 == nil {
		return
	}
	var parts []string
	for to, n := range wanUp(s, from) {
		if to != from {
			parts = append(parts, fmt.Sprintf("%s=%d", s.Names()[to], n-up0[to]))
		}
	}
	fmt.Printf("# wan block bytes from %s %s: %s\n", s.Names()[from], what, strings.Join(parts, " "))
}

// spread prints, as a comment line, how many of data's blocks each block
// server of site holds: a reader's fetches queue per server, so a file
// whose copies sit on one server reads with half the parallelism.
func spread(s *cluster.Sites, site int, layout string, size int, data []byte) {
	var counts []string
	for _, d := range s.Servers(site) {
		fs, err := d.BlockFiles()
		if err != nil {
			return
		}
		n := 0
		for off := 0; off < len(data); off += 1 << 20 {
			h := block.Sum(data[off:min(off+1<<20, len(data))])
			if _, ok := fs[hex.EncodeToString(h[:])]; ok {
				n++
			}
		}
		counts = append(counts, strconv.Itoa(n))
	}
	fmt.Printf("# blocks per server %s %d MiB: %s\n", layout, size, strings.Join(counts, " "))
}

// waitCopies waits (at most a minute) until site's block servers hold
// every block of data (1 MiB blocks, named by their hash).
func waitCopies(s *cluster.Sites, site int, data []byte) {
	var hashes []string
	for off := 0; off < len(data); off += 1 << 20 {
		h := block.Sum(data[off:min(off+1<<20, len(data))])
		hashes = append(hashes, hex.EncodeToString(h[:]))
	}
	for range 240 {
		if s.Missing(site, hashes) == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "multisite: site %d still misses blocks after a minute\n", site)
}

func overwriteSync(path string, data []byte) (float64, error) {
	start := time.Now()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

func readCheck(path string, want []byte, flags int) (float64, error) {
	sec, _, err := readCheckOpen(path, want, flags)
	return sec, err
}

// readCheckOpen is readCheck that also returns how long the open took (the
// meta service's part of a plain read: lookup, open record, lease, inode).
func readCheckOpen(path string, want []byte, flags int) (sec, open float64, err error) {
	start := time.Now()
	f, err := os.OpenFile(path, os.O_RDONLY|flags, 0)
	if err != nil {
		return 0, 0, err
	}
	open = time.Since(start).Seconds()
	got := readBuffer(len(want) + 1)
	n := 0
	for n < len(got) {
		k, err := f.Read(got[n:])
		n += k
		if err != nil || k == 0 {
			break
		}
	}
	f.Close()
	sec = time.Since(start).Seconds()
	if !bytes.Equal(got[:n], want) {
		return 0, 0, fmt.Errorf("%s: read %d bytes, not the %d written", path, n, len(want))
	}
	return sec, open, nil
}

// readBuf is what readCheckOpen reads into: one buffer, its pages touched
// when it grows, so that a timed read copies into memory the driver
// already has. A fresh buffer per read would fault in 4096 pages per 16
// MiB in the driver during the read (fresh memory is dear on this VM), and
// whether the Go heap hands a read fresh pages or reused ones depends on
// the reads and collections before it: it made the read at C, which comes
// first in each run, 8-10 ms of driver CPU dearer than the one at A' at
// 16 MiB.
var readBuf []byte

func readBuffer(n int) []byte {
	if len(readBuf) < n {
		readBuf = make([]byte, n)
		for i := 0; i < n; i += 4096 {
			readBuf[i] = 1
		}
	}
	return readBuf[:n]
}

func runCreates(s *cluster.Sites, n, threads int, each bool) {
	dirs := "one"
	if each {
		dirs = "each"
	}
	for site := range s.Names() {
		d := filepath.Join(s.Mount(site).Mount(), "creates-"+dirs+"-"+s.Names()[site])
		fail(os.Mkdir(d, 0o755))
		wdir := func(int) string { return d }
		if each {
			for w := range threads {
				fail(os.Mkdir(filepath.Join(d, fmt.Sprintf("w%d", w)), 0o755))
			}
			wdir = func(w int) string { return filepath.Join(d, fmt.Sprintf("w%d", w)) }
		}
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		// The cluster writes on its own too (heartbeats, sessions): its
		// rate over an idle interval is taken off the phase's growth.
		b0, idle := proposals(s.EtcdClientURL(site)), time.Now()
		time.Sleep(idleSample)
		p0 := proposals(s.EtcdClientURL(site))
		bgRate := float64(p0-b0) / time.Since(idle).Seconds()
		start := time.Now()
		for w := range threads {
			wg.Go(func() {
				for k := range n / threads {
					f, err := os.Create(filepath.Join(wdir(w), fmt.Sprintf("w%d-%d", w, k)))
					if err == nil {
						err = f.Close()
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		sec := time.Since(start).Seconds()
		close(errs)
		for err := range errs {
			fail(err)
		}
		total := n / threads * threads
		perCreate := math.NaN()
		if p1 := proposals(s.EtcdClientURL(site)); b0 >= 0 && p0 >= 0 && p1 >= 0 {
			perCreate = (float64(p1-p0) - bgRate*sec) / float64(total)
		}
		leader := "?"
		for i, name := range s.Names() {
			if metric(s.EtcdClientURL(i), "etcd_server_is_leader") == 1 {
				leader = name
			}
		}
		fmt.Printf("creates\t%s\t%s\t%d\t%.3f\t%.1f\t%.2f\t%s\n", s.Names()[site], dirs, threads, sec, float64(total)/sec, perCreate, leader)
	}
}

// idleSample is how long runCreates watches the idle cluster's own etcd
// writes before a phase.
const idleSample = 10 * time.Second

// proposals reads etcd_server_proposals_committed_total from a member's
// /metrics; -1 when it cannot.
func proposals(clientURL string) int64 {
	return metric(clientURL, "etcd_server_proposals_committed_total")
}

// metric reads one unlabelled series from a member's /metrics; -1 when it
// cannot.
func metric(clientURL, name string) int64 {
	resp, err := http.Get(clientURL + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int64(f)
		}
	}
	return -1
}

func row(kind, layout string, size, run int, sec float64, wan int64) {
	fmt.Printf("%s\t%s\t%d\t%d\t%.4f", kind, layout, size, run, sec)
	if wan >= 0 {
		fmt.Printf("\t%d", wan)
	}
	fmt.Println()
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "multisite:", err)
		os.Exit(1)
	}
}
