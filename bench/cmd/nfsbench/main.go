// Command nfsbench runs bench/nfs.sh's jobs against an NFSv3 server, speaking
// to it straight on its ports with github.com/willscott/go-nfs-client (no
// portmapper, no kernel client), or as plain file calls under a directory (a
// FUSE mount), so every target is driven by the same code.
//
//	nfsbench -nfs HOST:PORT[,MOUNTPORT] [-export /] [-uid 1000 -gid 1000] [-stable unstable|file_sync] -job JOB ...
//	nfsbench -dir DIR -job JOB ...
//
// Jobs (paths are relative to the export or DIR):
//
//	seqwrite -file F -size S [-window W]   write S bytes in wsize pieces (W at once), then COMMIT (fsync)
//	seqread  -file F -size S [-window W]   read them back in rsize pieces (W at once), checking each piece's stamp
//	randread -file F -size S -streams N -count K   K 4 KiB reads at random offsets, split over N streams
//	meta     -path D -n N -threads T   create, stat (LOOKUP), remove N empty files, one directory per worker
//	untar    -tar FILE -path D  create the tar's directories, files (written, then COMMIT at close) and symlinks
//
// Every NFS worker has its own connection; a worker is one call in flight,
// except that seqwrite and seqread keep -window calls in flight on their
// one connection (calls are matched to replies by xid). Output, one line per
// timed phase: "job=seqwrite ops=1 bytes=2147483648 secs=12.345".
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// client is one worker's view of the target.
type client interface {
	Mkdir(p string, mode uint32) error
	Create(p string, mode uint32) (file, error)
	Open(p string) (file, error)
	Stat(p string) error
	Remove(p string) error
	Symlink(target, p string) error
	IOSize() (read, write int)
}

// file is an open file; Close of an NFS file COMMITs what it wrote.
type file interface {
	WriteAt(p []byte, off int64) error
	ReadAt(p []byte, off int64) (int, error)
	Sync() error
	Close() error
}

type target interface {
	newClient() (client, error)
	close()
	describe() string
}

type options struct {
	job, file, path, tar string
	size                 int64
	streams, count       int
	window               int
	n, threads           int
	seed                 int64
	dropCaches           bool
}

func main() {
	var o options
	nfsAddr := flag.String("nfs", "", "NFS server HOST:PORT, or HOST:NFSPORT,MOUNTPORT when MOUNT answers elsewhere")
	dir := flag.String("dir", "", "instead of NFS: do the jobs as plain file calls under this directory")
	export := flag.String("export", "/", "the export to MOUNT")
	uid := flag.Uint("uid", 1000, "AUTH_SYS uid")
	gid := flag.Uint("gid", 1000, "AUTH_SYS gid")
	stable := flag.String("stable", "unstable", "WRITE's stable_how: unstable (COMMIT makes it durable) or file_sync")
	maxIO := flag.Uint("max-io", 1<<20, "cap on READ and WRITE sizes (the server's preferred sizes below it are used)")
	size := flag.String("size", "1G", "file size for seqwrite, seqread and randread (K, M, G suffixes)")
	flag.StringVar(&o.job, "job", "", "seqwrite, seqread, randread, meta or untar")
	flag.StringVar(&o.file, "file", "seq.dat", "file of the seq and rand jobs")
	flag.StringVar(&o.path, "path", "meta", "directory of the meta and untar jobs (made; must not exist)")
	flag.StringVar(&o.tar, "tar", "", "tar file (local) for the untar job")
	flag.IntVar(&o.streams, "streams", 1, "randread: concurrent streams, each on its own connection")
	flag.IntVar(&o.window, "window", 1, "seqwrite, seqread: calls in flight at once on the one connection (a kernel client's read-ahead and write-behind); 1: one after another")
	flag.IntVar(&o.count, "count", 20000, "randread: reads in all, split over the streams")
	flag.IntVar(&o.n, "n", 10000, "meta: files in all, split over the workers")
	flag.IntVar(&o.threads, "threads", 4, "meta: workers, each on its own connection and in its own directory")
	flag.Int64Var(&o.seed, "seed", 7, "seqwrite: seed of the data written (give each run its own: a content-addressed store dedups a repeated file); randread: seed of the offsets")
	flag.BoolVar(&o.dropCaches, "drop-caches", false, "meta: sync and drop the kernel's caches before each phase, untimed (root)")
	timeout := flag.Duration("rpc-timeout", 0, "time one call may wait for its reply before the client resends it (0: 10m; the library's own 5 s resends COMMITs of big files)")
	flag.Parse()

	var err error
	if o.size, err = parseSize(*size); err != nil {
		fail(err)
	}
	if o.streams < 1 || o.threads < 1 || o.count < 1 || o.n < 1 || o.window < 1 || o.window > 64 {
		fail(fmt.Errorf("-streams, -threads, -count, -n and -window must be at least 1 (-window at most 64)"))
	}
	rpc.DefaultReadTimeout = *timeout
	if *timeout <= 0 {
		rpc.DefaultReadTimeout = 600e9
	}
	var t target
	switch {
	case (*nfsAddr == "") == (*dir == ""):
		fail(fmt.Errorf("give one of -nfs HOST:PORT and -dir DIR"))
	case *dir != "":
		t = &localTarget{root: *dir}
	default:
		h, np, mp, err := parseNFSAddr(*nfsAddr)
		if err != nil {
			fail(err)
		}
		how := map[string]uint32{"unstable": unstable, "file_sync": fileSync}
		st, ok := how[*stable]
		if !ok {
			fail(fmt.Errorf("-stable %q: want unstable or file_sync", *stable))
		}
		nt := &nfsTarget{host: h, nfsPort: np, mntPort: mp, export: *export, uid: uint32(*uid), gid: uint32(*gid), stable: st, maxIO: uint32(*maxIO)}
		if err := nt.mount(); err != nil {
			fail(err)
		}
		t = nt
	}
	defer t.close()
	fmt.Fprintf(os.Stderr, "nfsbench: %s\n", t.describe())
	if err := run(t, o); err != nil {
		t.close()
		fail(fmt.Errorf("%s: %w", o.job, err))
	}
}

func run(t target, o options) error {
	switch o.job {
	case "seqwrite":
		return seqWrite(t, o)
	case "seqread":
		return seqRead(t, o)
	case "randread":
		return randRead(t, o)
	case "meta":
		return meta(t, o)
	case "untar":
		return untar(t, o)
	}
	return fmt.Errorf("-job %q: want seqwrite, seqread, randread, meta or untar", o.job)
}

func report(job string, ops int, bytes int64, secs float64) {
	fmt.Printf("job=%s ops=%d bytes=%d secs=%.6f\n", job, ops, bytes, secs)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	u := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "iB"), "B"))
	switch {
	case strings.HasSuffix(u, "K"):
		mult, u = 1<<10, strings.TrimSuffix(u, "K")
	case strings.HasSuffix(u, "M"):
		mult, u = 1<<20, strings.TrimSuffix(u, "M")
	case strings.HasSuffix(u, "G"):
		mult, u = 1<<30, strings.TrimSuffix(u, "G")
	}
	var n int64
	if _, err := fmt.Sscan(u, &n); err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("-size %q: want a positive size such as 512M or 2G", s)
	}
	return n * mult, nil
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "nfsbench: %v\n", err)
	os.Exit(1)
}
